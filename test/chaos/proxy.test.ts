/** The peer proxy learns each link from the handshake frames and applies pass / blackhole / delay / loss. */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Packr } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/index.js';
import { freePort } from '../e2e/harness.js';
import { PeerProxy, type LinkMode } from './proxy.js';

const packr = new Packr({ useRecords: false, int64AsType: 'bigint' });
function frame(type: number, body: unknown): Buffer {
  const payload = packr.pack(body);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length + 1, 0);
  head.writeUInt8(type, 4);
  return Buffer.concat([head, payload]);
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** A fake member 7: says Hello, then collects what it receives. */
async function fakeMember(): Promise<{ port: number; received: () => string; sockets: Socket[] }> {
  const port = await freePort();
  let got = '';
  const sockets: Socket[] = [];
  const server: Server = createServer((s) => {
    sockets.push(s);
    s.write(frame(1, { nonce: Buffer.alloc(32), id: 7n, clusterId: 1n }));
    s.on('data', (d) => (got += d.toString('latin1'))).on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  cleanups.push(() => new Promise<void>((r) => { sockets.forEach((s) => s.destroy()); server.close(() => r()); }));
  return { port, received: () => got, sockets };
}

async function setup(mode: { current: LinkMode }) {
  const member = await fakeMember();
  const proxy = new PeerProxy({ name: 'm7', targetPort: member.port, rng: new Prng(1), rule: () => (from, to) => (from === '9' && to === '7' ? mode.current : { kind: 'pass' }) });
  const port = await freePort();
  await proxy.listen(port);
  cleanups.push(() => proxy.close());
  const client = connect(port, '127.0.0.1');
  client.on('error', () => {});
  const closed = new Promise<void>((r) => client.once('close', () => r()));
  await new Promise<void>((r) => client.once('data', () => r())); // the Hello came through
  client.write(frame(2, { kind: 'raft', from: 9n, to: 7n, clusterId: 1n, nonce: Buffer.alloc(32), mac: Buffer.alloc(32) }));
  await waitUntil(() => member.received().length > 0);
  return { member, proxy, client, closed };
}

async function waitUntil(cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('PeerProxy', () => {
  it('forwards a link, swallows it while blackholed, and resets it on heal', async () => {
    const mode = { current: { kind: 'pass' } as LinkMode };
    const { member, proxy, client, closed } = await setup(mode);
    client.write('hello');
    await waitUntil(() => member.received().endsWith('hello'));
    mode.current = { kind: 'blackhole' };
    proxy.refresh();
    client.write('lost');
    await new Promise((r) => setTimeout(r, 100));
    expect(member.received()).not.toContain('lost');
    expect(proxy.stats.swallowedBytes).toBe(4);
    mode.current = { kind: 'pass' };
    proxy.refresh();
    await closed;
    expect(proxy.stats.resets).toBe(1);
  });

  it('delays each chunk and keeps the order', async () => {
    const mode = { current: { kind: 'delay', meanMs: 150, jitterMs: 50 } as LinkMode };
    const { member, client } = await setup(mode);
    const t0 = Date.now();
    for (const c of ['a', 'b', 'c']) client.write(c);
    await waitUntil(() => member.received().endsWith('abc'));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(95);
  });

  it('resets a lossy link', async () => {
    const mode = { current: { kind: 'pass' } as LinkMode };
    const { client, closed, proxy } = await setup(mode);
    mode.current = { kind: 'loss', p: 1 };
    client.write('x');
    await closed;
    expect(proxy.stats.resets).toBe(1);
  });
});
