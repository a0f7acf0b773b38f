import * as net from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from '../../src/metrics/metrics.js';
import { FramedConnection } from '../../src/peer/connection.js';
import { acceptHandshake } from '../../src/peer/handshake.js';
import { registerTransportMetrics } from '../../src/peer/index.js';
import { type Node, append, heartbeat, startNode, token, waitFor } from './helpers.js';

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const tls = { certFile: fixture('peer.pem'), keyFile: fixture('peer.key'), trustedCaFile: fixture('ca.pem'), clientCertAuth: true };

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});
async function node(...args: Parameters<typeof startNode>): Promise<Node> {
  const n = await startNode(...args);
  open.push(n.transport);
  return n;
}

describe('peer transport over TLS', () => {
  it('delivers messages, snapshots and requests between members with verified certificates', async () => {
    const statuses: boolean[] = [];
    const a = await node(1n, { tls, onSnapshotStatus: (_id, ok) => statuses.push(ok) });
    const b = await node(2n, { tls, onRequest: async () => ({ ok: true, payload: 'pong' }) });
    a.transport.addPeer(2n, [b.url.replace('http:', 'https:')]);
    a.transport.send([heartbeat(1n, 2n, 3)]);
    await waitFor(() => b.received.length === 1, 'a message over TLS');
    await expect(a.transport.request(b.url, { method: 'ping' })).resolves.toEqual({ ok: true, payload: 'pong' });
    const snap = { ...heartbeat(1n, 2n, 0), type: 'MsgSnap' as const, snapshot: { meta: { index: 1, term: 1, confState: { voters: [1n], learners: [] } }, data: new Uint8Array(3 << 20).fill(7) } };
    await a.transport.sendSnapshot(snap);
    expect(statuses).toEqual([true]);
  });

  it('refuses a client whose certificate another CA signed, and a plain-TCP client', async () => {
    const b = await node(2n, { tls });
    const wrongCa = await node(3n, { tls: { ...tls, certFile: fixture('other.pem'), keyFile: fixture('other.key') } });
    await expect(wrongCa.transport.request(b.url, { method: 'x' }, { timeoutMs: 1_500 })).rejects.toThrow();
    const plain = await node(4n);
    await expect(plain.transport.request(b.url, { method: 'x' }, { timeoutMs: 1_500 })).rejects.toThrow();
    expect(b.received).toEqual([]);
  });
});

describe('peer transport backpressure', () => {
  it('stops writing into a peer that stops reading, bounds the queue and reports drops', async () => {
    // A peer that authenticates properly, then never reads: the kernel buffers fill, then ours.
    const sockets: net.Socket[] = [];
    const stalled = net.createServer((socket) => {
      sockets.push(socket);
      const conn = new FramedConnection(socket);
      void acceptHandshake(conn, { selfId: 2n, clusterId: () => 0n, token }, 5_000).then(() => socket.pause());
    });
    await new Promise<void>((r) => stalled.listen(0, '127.0.0.1', r));
    open.push({ close: () => new Promise((r) => { for (const s of sockets) s.destroy(); stalled.close(r); }) });
    const port = (stalled.address() as net.AddressInfo).port;
    const a = await node(1n, { limits: { queueMessagesMax: 64, socketBufferedBytesMax: 256 * 1024 } });
    a.transport.addPeer(2n, [`127.0.0.1:${port}`]);
    await waitFor(() => a.transport.stats().get(2n)?.connected === true, 'handshake with the stalled peer');
    const data = new Uint8Array(64 * 1024);
    for (let round = 0; round < 400 && a.unreachable.length === 0; round++) {
      a.transport.send(Array.from({ length: 16 }, (_, i) => append(1n, 2n, round * 16 + i, data)));
      await new Promise((r) => setImmediate(r));
    }
    const stats = a.transport.stats().get(2n);
    expect(a.unreachable[0]).toBe(2n);
    expect(stats?.sendFailures).toBeGreaterThan(0);
    // What was written is bounded by the socket limit plus one batch, not by what was offered.
    expect(stats?.bytesSent).toBeLessThan(400 * 16 * data.length);
  });
});

describe('transport metrics', () => {
  it('exports per-peer counters under etcd names', async () => {
    const a = await node(1n);
    const b = await node(2n);
    a.transport.addPeer(2n, [b.url]);
    a.transport.send([heartbeat(1n, 2n, 1), heartbeat(1n, 2n, 2)]);
    a.transport.send([heartbeat(1n, 9n, 1)]);
    await waitFor(() => b.received.length === 2, 'delivery');
    const registry = new Registry();
    registerTransportMetrics(registry, a.transport, 1n);
    const text = registry.expose();
    expect(text).toMatch(/^etcd_network_peer_sent_bytes_total\{To="2"\} [1-9]\d*$/m);
    expect(text).toContain('etcd_network_peer_sent_failures_total{To="9"} 1');
    expect(text).toContain('etcetera_peer_messages_sent_total{To="2"} 2');
    expect(text).toContain('etcd_network_active_peers{Local="1",Remote="2"} 1');
    const atB = new Registry();
    registerTransportMetrics(atB, b.transport, 2n);
    expect(atB.expose()).toContain('etcetera_peer_messages_received_total{From="1"} 2');
  });
});
