/**
 * Our HTTP/2 connection at the frame level, driven by a raw socket client: the preface, one write per unary
 * answer, both directions' flow control, the limits on what a client may make us hold or decode, and the
 * answers RFC 9113 gives to a client breaking the protocol (GOAWAY with its code, or RST_STREAM).
 */
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { FramesGrpcServer } from '../../../src/api/h2frames/frames-grpc-server.js';
import { errorCode, flag, frame, frameType, settingId } from '../../../src/api/h2frames/frame-format.js';
import { serviceDefinition } from '../../../src/api/grpc/proto.js';
import { frameMessage } from '../../../src/api/h2grpc/message-frames.js';
import { h2ConnectionWindowBytes, h2HeaderListBytesMax } from '../../../src/base/limits.js';
import { dataOf, endedStream, headersOf, RawClient, requestBlock } from './raw-client.js';

const putPath = '/etcdserverpb.KV/Put';
const rangePath = '/etcdserverpb.KV/Range';
const keepAlivePath = '/etcdserverpb.Lease/LeaseKeepAlive';
const emptyMessage = frameMessage(Buffer.alloc(0));

let server: FramesGrpcServer;
let listener: net.Server;
let port: number;
/** Low-level writes (write or writev) of each server socket, in accept order. */
const writesPerSocket: number[][] = [];
/** Each Put answers a response of this many bytes in `key` of its prev_kv. */
let responseKeyBytes = 1;
/** setNoDelay's argument per server socket (undefined: never called). */
const noDelayPerSocket: (boolean | undefined)[] = [];

beforeAll(async () => {
  server = new FramesGrpcServer({ messageBytesMax: 4 * 1024 * 1024, concurrentStreamsMax: 4 });
  server.addService(serviceDefinition('etcdserverpb.KV'), {
    Put: (_call: unknown, cb: (err: unknown, value?: unknown) => void) => cb(null, { prevKv: { key: Buffer.alloc(responseKeyBytes, 7) } }),
    // Never answers: holds its stream open.
    Range: () => {},
  } as unknown as grpc.UntypedServiceImplementation);
  server.addService(serviceDefinition('etcdserverpb.Lease'), {
    LeaseKeepAlive: (call: { pause(): void }) => call.pause(),
  } as unknown as grpc.UntypedServiceImplementation);
  listener = net.createServer((socket) => {
    const counts: number[] = [];
    writesPerSocket.push(counts);
    const s = socket as unknown as { _write: Function; _writev: Function };
    const write = s._write.bind(socket);
    const writev = s._writev.bind(socket);
    s._write = (...args: unknown[]) => (counts.push(1), write(...args));
    s._writev = (...args: unknown[]) => (counts.push((args[0] as unknown[]).length), writev(...args));
    const at = noDelayPerSocket.push(undefined) - 1;
    const setNoDelay = socket.setNoDelay.bind(socket);
    socket.setNoDelay = (on?: boolean) => ((noDelayPerSocket[at] = on), setNoDelay(on));
    server.inject(socket);
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as net.AddressInfo).port;
});
afterAll(async () => {
  listener.close();
  await server.close(100);
});

describe('H2Connection', () => {
  it('sends its SETTINGS and a connection WINDOW_UPDATE first, and answers a unary call in one socket write', async () => {
    const c = new RawClient(port);
    await c.until((fs) => fs.length >= 2);
    expect(c.frames[0]!.type).toBe(frameType.settings);
    expect(c.frames[1]!.type).toBe(frameType.windowUpdate);
    expect(c.frames[1]!.payload.readUInt32BE(0)).toBe(h2ConnectionWindowBytes - 65_535);
    await c.until((fs) => fs.some((f) => f.type === frameType.settings && f.flags === flag.ack));
    const counts = writesPerSocket.at(-1)!;
    const before = counts.length;
    c.send(headersOf(1, requestBlock(putPath)), dataOf(1, emptyMessage));
    await c.until(endedStream(1));
    const answer = c.frames.filter((f) => f.streamId === 1);
    expect(answer.map((f) => f.type)).toEqual([frameType.headers, frameType.data, frameType.headers]);
    expect(counts.length - before).toBe(1);
    // Nagle's algorithm off: an answer never waits for the client's delayed ACK of the one before.
    expect(noDelayPerSocket.at(-1)).toBe(true);
    c.socket.destroy();
  });

  it("follows the client's stream window: data past it waits for a WINDOW_UPDATE, then the rest and the trailers follow", async () => {
    responseKeyBytes = 100;
    const c = new RawClient(port, [[settingId.initialWindowSize, 10]]);
    c.send(headersOf(1, requestBlock(putPath)), dataOf(1, emptyMessage));
    await c.until((fs) => fs.some((f) => f.streamId === 1 && f.type === frameType.data));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const data = () => c.frames.filter((f) => f.streamId === 1 && f.type === frameType.data);
    expect(data().map((f) => f.payload.length)).toEqual([10]);
    expect(endedStream(1)(c.frames)).toBe(false);
    const increment = Buffer.alloc(4);
    increment.writeUInt32BE(1000);
    c.send(frame(frameType.windowUpdate, 0, 1, increment));
    await c.until(endedStream(1));
    const total = data().reduce((n, f) => n + f.payload.length, 0);
    expect(total).toBeGreaterThan(100);
    c.socket.destroy();
    responseKeyBytes = 1;
  });

  it("resets a stream sent more than its window FLOW_CONTROL_ERROR, and the connection serves on", async () => {
    const c = new RawClient(port);
    // A paused call takes nothing, so the client's window is never granted back.
    c.send(headersOf(1, requestBlock(keepAlivePath)));
    // 4 frames of 16 KiB + 1: one byte past the stream's 65,535.
    for (let i = 0; i < 4; i++) c.send(dataOf(1, Buffer.alloc(16_384), 0));
    c.send(dataOf(1, Buffer.alloc(1), 0));
    await c.until((fs) => fs.some((f) => f.type === frameType.rstStream && f.streamId === 1));
    expect(c.frames.find((f) => f.type === frameType.rstStream)!.payload.readUInt32BE(0)).toBe(errorCode.flowControl);
    c.send(headersOf(3, requestBlock(putPath)), dataOf(3, emptyMessage));
    await c.until(endedStream(3));
    c.socket.destroy();
  });

  it('refuses streams over SETTINGS_MAX_CONCURRENT_STREAMS REFUSED_STREAM', async () => {
    const c = new RawClient(port);
    for (let id = 1; id <= 9; id += 2) c.send(headersOf(id, requestBlock(rangePath)));
    await c.until((fs) => fs.some((f) => f.type === frameType.rstStream && f.streamId === 9));
    expect(c.frames.find((f) => f.type === frameType.rstStream)!.payload.readUInt32BE(0)).toBe(errorCode.refusedStream);
    c.socket.destroy();
  });

  it('answers a header list over the limit 431 and keeps HPACK in step for the next request', async () => {
    const c = new RawClient(port);
    // One literal added to the table (incremental indexing, new name), then referenced until the list is too large.
    const value = 'v'.repeat(1000);
    // 0x40: literal with incremental indexing, new name; the value's length 1000 is 127 + 873 (0xe9 0x06).
    const added = Buffer.concat([Buffer.from([0x40, 5]), Buffer.from('x-big'), Buffer.from([0x7f, 0xe9, 0x06]), Buffer.from(value)]);
    const references = Buffer.alloc(Math.ceil(h2HeaderListBytesMax / 1000) + 1, 0x80 | 62);
    c.send(headersOf(1, Buffer.concat([requestBlock(putPath), added, references]), flag.endHeaders | flag.endStream));
    await c.until(endedStream(1));
    const status = c.frames.find((f) => f.streamId === 1)!;
    expect(status.payload.toString('latin1')).toContain('431');
    // The entry the refused block added is still there: index 62 decodes on the next request.
    c.send(headersOf(3, Buffer.concat([requestBlock(putPath), Buffer.from([0x80 | 62])])), dataOf(3, emptyMessage));
    await c.until(endedStream(3));
    expect(c.frames.filter((f) => f.streamId === 3).map((f) => f.type)).toEqual([frameType.headers, frameType.data, frameType.headers]);
    c.socket.destroy();
  });

  const connectionErrors: [string, (c: RawClient) => void, number][] = [
    [
      'a header block over the limit',
      (c) => c.send(headersOf(1, Buffer.alloc(16_000, 0x80 | 2), 0), frame(frameType.continuation, flag.endHeaders, 1, Buffer.alloc(h2HeaderListBytesMax - 16_000 + 1, 0x80 | 2))),
      errorCode.enhanceYourCalm,
    ],
    ['an invalid HPACK block', (c) => c.send(headersOf(1, Buffer.from([0x80 | 127, 0xff, 0xff, 0xff, 0x0f]))), errorCode.compression],
    ['a frame over SETTINGS_MAX_FRAME_SIZE', (c) => c.send(dataOf(1, Buffer.alloc(16_385))), errorCode.frameSize],
    ['an even stream id', (c) => c.send(headersOf(2, requestBlock(putPath))), errorCode.protocol],
    ['DATA on an idle stream', (c) => c.send(dataOf(7, emptyMessage)), errorCode.protocol],
    ['a PUSH_PROMISE', (c) => c.send(frame(frameType.pushPromise, flag.endHeaders, 1, Buffer.alloc(4))), errorCode.protocol],
    ['a header block interrupted by another frame', (c) => c.send(headersOf(1, requestBlock(putPath), 0), frame(frameType.ping, 0, 0, Buffer.alloc(8))), errorCode.protocol],
  ];
  for (const [what, send, code] of connectionErrors) {
    it(`answers ${what} GOAWAY ${code} and closes`, async () => {
      const c = new RawClient(port);
      send(c);
      expect(await c.goAway()).toBe(code);
      await c.closedSocket();
    });
  }

  it('answers a wrong preface GOAWAY PROTOCOL_ERROR', async () => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (b: Buffer) => chunks.push(b));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => socket.once('close', resolve));
    const bytes = Buffer.concat(chunks);
    const goAway = bytes.indexOf(Buffer.from([frameType.goAway, 0, 0, 0, 0, 0]), 0);
    expect(goAway).toBeGreaterThan(0);
    expect(bytes.readUInt32BE(goAway + 2 + 4 + 4)).toBe(errorCode.protocol);
  });

  it('acknowledges a PING with its payload', async () => {
    const c = new RawClient(port);
    c.send(frame(frameType.ping, 0, 0, Buffer.from('12345678')));
    await c.until((fs) => fs.some((f) => f.type === frameType.ping && f.flags === flag.ack));
    expect(c.frames.find((f) => f.type === frameType.ping)!.payload.toString()).toBe('12345678');
    c.socket.destroy();
  });

  it('cuts a client that sends PINGs and never reads the answers', async () => {
    const c = new RawClient(port);
    await c.until((fs) => fs.length >= 2);
    c.socket.pause();
    const ping = frame(frameType.ping, 0, 0, Buffer.alloc(8));
    const burst = Buffer.concat(Array.from({ length: 10_000 }, () => ping));
    // The kernel's buffers take a few MiB of answers first; past them the server holds at most its limit.
    for (let i = 0; i < 200 && !c.closed; i++) {
      await new Promise<void>((resolve) => {
        if (c.socket.write(burst)) return resolve();
        c.socket.once('drain', resolve);
        c.socket.once('close', resolve);
      });
    }
    // Its GOAWAY waits behind the unread answers, which are dropped when the socket is destroyed.
    c.socket.resume();
    await c.closedSocket();
  });
});
