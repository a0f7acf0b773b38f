/**
 * A connection that never finishes HTTP/2's handshake (the preface and the first SETTINGS) is closed after
 * the handshake time (grpc-go's ConnectionTimeout; base/limits.ts h2HandshakeMs), whether it sent nothing,
 * part of the preface, or the preface alone; one that finished it stays open.
 */
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { H2Connection } from '../../../src/api/h2frames/h2-connection.js';
import { clientPreface, settingsFrame } from '../../../src/api/h2frames/frame-format.js';

const handshakeMs = 150;
let listener: net.Server;
let port: number;

beforeAll(async () => {
  listener = net.createServer((socket) => {
    new H2Connection(socket, { concurrentStreamsMax: undefined, keepAliveIntervalMs: 0, keepAliveTimeoutMs: 0, pingPolicy: undefined, onStream: () => {}, handshakeMs });
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as net.AddressInfo).port;
});
afterAll(() => void listener.close());

/** Connects, sends `bytes`, and resolves how long the server kept the connection (capped at `capMs`). */
async function keptMs(bytes: Buffer, capMs: number): Promise<number> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.resume();
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const started = performance.now();
  socket.write(bytes);
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now() - started)));
  const cap = new Promise<number>((resolve) => setTimeout(() => resolve(Infinity), capMs));
  const kept = await Promise.race([closed, cap]);
  socket.destroy();
  return kept;
}

describe('the HTTP/2 handshake time', () => {
  it('closes a connection that sent nothing, part of the preface, or the preface alone', async () => {
    for (const bytes of [Buffer.alloc(0), clientPreface.subarray(0, 10), clientPreface]) {
      const kept = await keptMs(bytes, 5000);
      expect(kept).toBeGreaterThanOrEqual(handshakeMs - 20);
      expect(kept).toBeLessThan(5000);
    }
  });

  it('keeps a connection that sent the preface and its SETTINGS', async () => {
    expect(await keptMs(Buffer.concat([clientPreface, settingsFrame([])]), handshakeMs * 4)).toBe(Infinity);
  });
});
