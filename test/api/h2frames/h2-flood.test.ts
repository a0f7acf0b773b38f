/**
 * The flood limits of our HTTP/2 connection (flood-guard.ts), driven by a raw socket client: rapid reset and
 * refused streams, frames that do no work, requests whose answers are not read. Each flood ends in GOAWAY
 * ENHANCE_YOUR_CALM and the connection's end; the well-behaved patterns next to them (a client cancelling calls,
 * long calls cancelled late, a few idle frames per request, grpc-js cancelling 500 of 2,000 calls) are served.
 */
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { FramesGrpcServer } from '../../../src/api/h2frames/frames-grpc-server.js';
import { errorCode, flag, frame, frameType, settingId, settingsFrame, windowUpdateFrame } from '../../../src/api/h2frames/frame-format.js';
import { serviceDefinition } from '../../../src/api/grpc/proto.js';
import { frameMessage } from '../../../src/api/h2grpc/message-frames.js';
import { Prng } from '../../../src/base/prng.js';
import { h2IdleFramesMax, h2ResetEpochStreams, h2ResetStreamsMax } from '../../../src/base/limits.js';
import { dataOf, endedStream, headersOf, RawClient, requestBlock } from './raw-client.js';

const putPath = '/etcdserverpb.KV/Put';
const rangePath = '/etcdserverpb.KV/Range';
const emptyMessage = frameMessage(Buffer.alloc(0));
const rst = (streamId: number, code: number = errorCode.cancel): Buffer => {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(code);
  return frame(frameType.rstStream, 0, streamId, payload);
};
/** A Put answered at once, on stream `id`. */
const put = (id: number): Buffer => Buffer.concat([headersOf(id, requestBlock(putPath)), dataOf(id, emptyMessage)]);
/** A Range, which the server holds until the client resets it, on stream `id`. */
const held = (id: number): Buffer => Buffer.concat([headersOf(id, requestBlock(rangePath)), dataOf(id, emptyMessage)]);
const repeat = (n: number, bytes: (i: number) => Buffer): Buffer => Buffer.concat(Array.from({ length: n }, (_, i) => bytes(i)));
const goAways = (c: RawClient) => c.frames.filter((f) => f.type === frameType.goAway);

interface Running {
  server: FramesGrpcServer;
  listener: net.Server;
  port: number;
  /** Connections accepted so far. */
  accepted: number;
}

/** Each Put answers a prev_kv key of this many bytes. */
let putKeyBytes = 1;
/** Ranges the server got, by their key: grpc-js' test cancels them from here. */
const onRange = new Map<string, () => void>();

async function start(concurrentStreamsMax: number | undefined): Promise<Running> {
  const server = new FramesGrpcServer({ messageBytesMax: 4 * 1024 * 1024, concurrentStreamsMax });
  server.addService(serviceDefinition('etcdserverpb.KV'), {
    Put: (_call: unknown, cb: (err: unknown, value?: unknown) => void) => cb(null, { prevKv: { key: Buffer.alloc(putKeyBytes, 7) } }),
    // Never answers: holds its stream until the client resets it.
    Range: (call: { request: { key?: Uint8Array } }) => onRange.get(Buffer.from(call.request.key ?? []).toString())?.(),
  } as unknown as grpc.UntypedServiceImplementation);
  const running = { server, port: 0, accepted: 0 } as Running;
  running.listener = net.createServer((socket) => {
    running.accepted++;
    server.inject(socket);
  });
  await new Promise<void>((resolve) => running.listener.listen(0, '127.0.0.1', resolve));
  running.port = (running.listener.address() as net.AddressInfo).port;
  return running;
}

let open: Running;
let limited: Running;
beforeAll(async () => {
  open = await start(undefined);
  limited = await start(4);
});
afterAll(async () => {
  for (const r of [open, limited]) {
    r.listener.close();
    await r.server.close(100);
  }
});

/** Expects GOAWAY ENHANCE_YOUR_CALM and the socket's end. */
async function expectCalm(c: RawClient): Promise<void> {
  expect(await c.goAway()).toBe(errorCode.enhanceYourCalm);
  await c.closedSocket();
}

/** Expects a Put on `id` answered and no GOAWAY. */
async function expectServed(c: RawClient, id: number): Promise<void> {
  c.send(put(id));
  await c.until(endedStream(id));
  expect(goAways(c)).toEqual([]);
  c.socket.destroy();
}

describe('H2Connection flood limits: streams', () => {
  it('cuts a client that opens streams and resets them before the answer (rapid reset)', async () => {
    const c = new RawClient(open.port);
    const pairs = h2ResetStreamsMax + 50;
    c.send(repeat(pairs, (i) => Buffer.concat([held(2 * i + 1), rst(2 * i + 1)])));
    await expectCalm(c);
    // Cut at the first reset past the limit: streams after it were not served.
    expect(goAways(c)[0]!.payload.readUInt32BE(0)).toBe(2 * h2ResetStreamsMax + 1);
  });

  it('cuts a client whose streams are refused over SETTINGS_MAX_CONCURRENT_STREAMS', async () => {
    const c = new RawClient(limited.port);
    c.send(repeat(4, (i) => held(2 * i + 1)));
    c.send(repeat(h2ResetStreamsMax + 50, (i) => held(2 * i + 9)));
    await expectCalm(c);
    const refused = c.frames.filter((f) => f.type === frameType.rstStream && f.payload.readUInt32BE(0) === errorCode.refusedStream);
    expect(refused.length).toBe(h2ResetStreamsMax + 1);
  });

  it('serves a client that resets one stream in two, for many epochs', async () => {
    const c = new RawClient(open.port);
    const rounds = 4 * h2ResetEpochStreams;
    c.send(repeat(rounds, (i) => Buffer.concat([put(4 * i + 1), held(4 * i + 3), rst(4 * i + 3)])));
    await c.until(endedStream(4 * rounds - 3));
    await expectServed(c, 4 * rounds + 1);
  });

  it('serves a client that resets, late, more long calls than the limit', async () => {
    const c = new RawClient(open.port);
    const long = h2ResetStreamsMax + 50;
    c.send(repeat(long, (i) => held(2 * i + 1)));
    // Two epochs of answered calls later, the long calls are reset: cancelling old calls is no flood.
    const answered = 2 * h2ResetEpochStreams;
    c.send(repeat(answered, (i) => put(2 * (long + i) + 1)));
    await c.until(endedStream(2 * (long + answered) - 1));
    c.send(repeat(long, (i) => rst(2 * i + 1)));
    await expectServed(c, 2 * (long + answered) + 1);
  });
});

describe('H2Connection flood limits: frames that do no work', () => {
  const past = h2IdleFramesMax + 10;
  const floods: [string, (c: RawClient) => Promise<void>][] = [
    ['empty DATA frames without END_STREAM', async (c) => c.send(held(1), repeat(past, () => dataOf(1, Buffer.alloc(0), 0)))],
    ['PRIORITY frames', async (c) => c.send(repeat(past, () => frame(frameType.priority, 0, 1, Buffer.alloc(5))))],
    ['frames of an unknown type', async (c) => c.send(repeat(past, () => frame(0x20, 0, 0, Buffer.alloc(8))))],
    ['empty CONTINUATION frames', async (c) => c.send(headersOf(1, requestBlock(putPath), 0), repeat(past, () => frame(frameType.continuation, 0, 1, Buffer.alloc(0))))],
    ['SETTINGS frames', async (c) => c.send(repeat(past, () => settingsFrame([])))],
    ['SETTINGS acks', async (c) => c.send(repeat(past, () => frame(frameType.settings, flag.ack, 0, Buffer.alloc(0))))],
    ['PING acks of no ping', async (c) => c.send(repeat(past, () => frame(frameType.ping, flag.ack, 0, Buffer.alloc(8))))],
    ['GOAWAY frames', async (c) => c.send(repeat(past, () => frame(frameType.goAway, 0, 0, Buffer.alloc(8))))],
    ...(
      [
        ['RST_STREAM', () => rst(1)],
        ['WINDOW_UPDATE', () => windowUpdateFrame(1, 1)],
        ['DATA', () => dataOf(1, emptyMessage, 0)],
        ['trailers', () => headersOf(1, requestBlock(putPath), flag.endHeaders | flag.endStream)],
      ] as const
    ).map(([what, bytes]): [string, (c: RawClient) => Promise<void>] => [
      `${what} frames for a stream already answered`,
      async (c) => {
        c.send(put(1));
        await c.until(endedStream(1));
        c.send(repeat(past, bytes));
      },
    ]),
  ];
  for (const [what, flood] of floods) {
    it(`cuts a client that sends ${h2IdleFramesMax} ${what}`, async () => {
      const c = new RawClient(open.port);
      await flood(c);
      await expectCalm(c);
    });
  }

  it('serves a client that sends a few such frames with each request', async () => {
    const c = new RawClient(open.port);
    const requests = 3 * h2IdleFramesMax;
    const idle = (id: number) => [frame(frameType.priority, 0, id, Buffer.alloc(5)), windowUpdateFrame(id, 1), rst(id), frame(0x20, 0, 0, Buffer.alloc(0))];
    // Each answered Put's late frames go with the next request.
    c.send(put(1), repeat(requests, (i) => Buffer.concat([put(2 * i + 3), ...idle(2 * i + 1)])));
    await c.until(endedStream(2 * requests + 1));
    await expectServed(c, 2 * requests + 3);
  });
});

describe('H2Connection flood limits: answers not read', () => {
  it('cuts a client that sends requests and does not read their answers', async () => {
    putKeyBytes = 15 * 1024;
    // Windows wide open, so every answer is written at once: only the socket holds them back.
    const c = new RawClient(open.port, [[settingId.initialWindowSize, 2 ** 31 - 1]]);
    c.send(windowUpdateFrame(0, 2 ** 31 - 1 - 65_535));
    await c.until((fs) => fs.some((f) => f.type === frameType.settings && f.flags === flag.ack));
    c.socket.pause();
    // The kernel's buffers take a few MiB first; 3,000 answers are 45 MiB.
    for (let i = 0; i < 30 && !c.closed; i++) {
      const batch = repeat(100, (j) => put(2 * (100 * i + j) + 1));
      await new Promise<void>((resolve) => {
        if (c.socket.write(batch)) return void setTimeout(resolve, 5);
        c.socket.once('drain', resolve);
        c.socket.once('close', resolve);
      });
    }
    c.socket.resume();
    await c.closedSocket();
    putKeyBytes = 1;
  });
});

describe('H2Connection flood limits: a well-behaved grpc-js client', () => {
  it('is not cut for 2,000 unary calls of which 500, at random, are cancelled once the server has them', async () => {
    const seed = 44_487;
    const prng = new Prng(seed);
    const Ctor = grpc.makeGenericClientConstructor(serviceDefinition('etcdserverpb.KV'), 'KV');
    const kv = new Ctor(`127.0.0.1:${open.port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
    const acceptedBefore = open.accepted;
    const cancelled = new Set<number>();
    while (cancelled.size < 500) cancelled.add(prng.int(2000));
    const outcomes = await Promise.all(
      Array.from({ length: 2000 }, (_, i) => {
        return new Promise<string>((resolve) => {
          const done = (err: grpc.ServiceError | null) => resolve(err === null ? 'ok' : grpc.status[err.code]!);
          if (!cancelled.has(i)) return void kv.Put!({ key: Buffer.from(`k${i}`) }, done);
          const call = kv.Range!({ key: Buffer.from(`r${i}`) }, done) as grpc.ClientUnaryCall;
          onRange.set(`r${i}`, () => call.cancel());
        });
      }),
    );
    kv.close();
    const counts = new Map<string, number>();
    for (const o of outcomes) counts.set(o, (counts.get(o) ?? 0) + 1);
    expect(Object.fromEntries(counts), `seed ${seed}`).toEqual({ ok: 1500, CANCELLED: 500 });
    expect(open.accepted - acceptedBefore, `seed ${seed}`).toBe(1);
    onRange.clear();
  });
});
