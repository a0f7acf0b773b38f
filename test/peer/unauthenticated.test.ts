/**
 * What a peer port gives whoever has not proven they know the join token (issue 31, items 1 and 2): frames of
 * a few KiB, a few KiB unread, no decoding of anything larger, and a refusal that ends the connection at once
 * (before, a wrong MAC left the socket half-open and 64 frames of 16 MiB queued: ~1 GB per connection).
 */
import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { peerHandshakeBufferedBytesMax, peerHandshakeFrameBytesMax } from '../../src/base/limits.js';
import { FrameReader, FrameType, decodePayload, encodeFrame, frameHeader } from '../../src/peer/frame.js';
import { type Node, startNode } from './helpers.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

async function node(id: bigint): Promise<Node> {
  const n = await startNode(id);
  open.push(n.transport);
  return n;
}

interface RawPeer {
  socket: net.Socket;
  /** Frames the member sent, parsed as they came. */
  frames: { type: number; body: unknown }[];
  closed: Promise<void>;
  closedAtMs: () => number | undefined;
}

/** A raw TCP client of the peer port, holding its own side open (it never ends the socket itself). */
async function dialRaw(port: number): Promise<RawPeer> {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  open.push({ close: () => socket.destroy() });
  const frames: RawPeer['frames'] = [];
  const reader = new FrameReader();
  socket.on('data', (chunk: Buffer) => {
    for (const f of reader.push(chunk)) frames.push({ type: f.type, body: decodePayload(f) });
  });
  socket.on('error', () => {}); // a write after the member closed: EPIPE / ECONNRESET is the point
  let closedAt: number | undefined;
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve(void (closedAt = performance.now()))));
  // Our side stays open after the member's FIN: keep writing a byte so that a member that really destroyed
  // its socket answers with a reset (then 'close'), while one that only half-closed keeps reading forever.
  // The probe is the start of a valid 15 MiB frame, so a member that still reads buffers it without complaint.
  socket.once('end', () => {
    if (!socket.destroyed) socket.write(frameHeader(FrameType.Messages, 15 * 1024 * 1024));
    const probe = setInterval(() => (socket.destroyed ? clearInterval(probe) : socket.write(Buffer.from([0]))), 10);
  });
  await new Promise((r) => socket.once('connect', r));
  return { socket, frames, closed, closedAtMs: () => closedAt };
}

async function until(cond: () => boolean, what: string, timeoutMs = 3_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

function wrongMacAuth(): Buffer {
  return encodeFrame(FrameType.Auth, { kind: 'raft', from: 7n, to: 0n, clusterId: 0n, nonce: randomBytes(32), mac: randomBytes(32) });
}

describe('the peer port before a successful handshake', () => {
  it('destroys a connection refused for a wrong MAC at once, though the client keeps its side open', async () => {
    const b = await node(2n);
    const peer = await dialRaw(b.port);
    await until(() => peer.frames.length === 1, 'hello');
    const sentAt = performance.now();
    peer.socket.write(wrongMacAuth());
    await peer.closed;
    expect(peer.frames.map((f) => f.type)).toEqual([FrameType.Hello, FrameType.Refused]);
    expect((peer.frames[1]!.body as { code: string }).code).toBe('badToken');
    // Flushed and destroyed, not waiting for the client's FIN (which never comes) nor for any timer.
    expect(peer.closedAtMs()! - sentAt).toBeLessThan(500);
  });

  it('reads nothing after a refusal: 15 MiB frames that follow a wrong MAC end the connection', async () => {
    const b = await node(2n);
    const peer = await dialRaw(b.port);
    await until(() => peer.frames.length === 1, 'hello');
    const frame = Buffer.concat([frameHeader(FrameType.Messages, 15 * 1024 * 1024), Buffer.alloc(15 * 1024 * 1024)]);
    peer.socket.write(wrongMacAuth());
    // What the attack sent (64 of them, ~1 GB held per connection before); 8 show the connection is gone.
    for (let i = 0; i < 8 && !peer.socket.destroyed; i++) peer.socket.write(frame);
    const gone = await Promise.race([peer.closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 5_000))]);
    expect(gone).toBe(true);
  });

  it('refuses a frame header longer than a handshake frame before reading its body', async () => {
    const b = await node(2n);
    const peer = await dialRaw(b.port);
    await until(() => peer.frames.length === 1, 'hello');
    // 16 M msgpack nils announced as an Auth frame: cost 250-450 ms of event loop to decode before.
    peer.socket.write(frameHeader(FrameType.Auth, 16 * 1024 * 1024 - 8));
    peer.socket.write(Buffer.alloc(64 * 1024, 0xc0));
    await peer.closed;
    expect(peer.frames.map((f) => f.type)).toEqual([FrameType.Hello]);
    await until(() => b.lines.some((l) => l.msg === 'peer connection refused' && String(l.error).includes(`exceeds the limit of ${peerHandshakeFrameBytesMax}`)), 'log line');
  });

  it('a dialler refuses an oversized Hello from whatever answers, before reading it', async () => {
    const b = await node(2n);
    let sentBytes = 0;
    const fake = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.write(frameHeader(FrameType.Hello, 15 * 1024 * 1024));
      const chunk = Buffer.alloc(64 * 1024, 0xc0);
      const pump = (): void => {
        while (!socket.destroyed && sentBytes < 15 * 1024 * 1024 && socket.write(chunk)) sentBytes += chunk.length;
      };
      socket.on('drain', pump);
      pump();
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    open.push({ close: () => new Promise((r) => fake.close(r)) });
    const url = `http://127.0.0.1:${(fake.address() as net.AddressInfo).port}`;
    await expect(b.transport.request(url, { method: 'members' }, { timeoutMs: 5_000 })).rejects.toThrow(`exceeds the limit of ${peerHandshakeFrameBytesMax}`);
    // Also true of bytes that are not one frame: more than peerHandshakeBufferedBytesMax unread ends it.
    expect(peerHandshakeBufferedBytesMax).toBeLessThan(64 * 1024);
  });

  it('still carries frames far larger than a handshake frame once authenticated', async () => {
    const a = await node(1n);
    const b = await node(2n);
    a.transport.addPeer(2n, [b.url]);
    const data = new Uint8Array(512 * 1024).fill(7);
    a.transport.send([{ type: 'MsgApp', from: 1n, to: 2n, term: 3, logTerm: 2, index: 1, commit: 1, reject: false, rejectHint: 0, entries: [{ term: 3, index: 2, type: 0, data }] }]);
    await until(() => b.received.length === 1, 'a 512 KiB append', 10_000);
    expect(b.received[0]!.entries[0]!.data.length).toBe(data.length);
  });
});
