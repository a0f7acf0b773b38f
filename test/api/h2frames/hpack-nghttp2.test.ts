/**
 * The HPACK decoder against a real encoder: Node's http2 client (nghttp2) sends requests with random headers to a
 * plain TCP server, which only records the bytes; the HEADERS (+ CONTINUATION) blocks are cut out of them with
 * the frame reader and decoded in order by one decoder, as our connection will. nghttp2 indexes, Huffman-codes
 * when shorter, evicts, and sends never-indexed literals for sensitive headers, so the dynamic table is exercised
 * the way a client exercises it. A failure prints its seed; HPACK_SEED=n replays it.
 */
import * as grpc from '@grpc/grpc-js';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Prng } from '../../../src/base/prng.js';
import { FrameReader, type Frame } from '../../../src/api/http2/frame-reader.js';
import { HpackDecoder } from '../../../src/api/h2frames/hpack.js';

const frameHeaders = 0x1;
const frameContinuation = 0x9;
const flagEndHeaders = 0x4;
const flagPadded = 0x8;
const flagPriority = 0x20;
/** An empty SETTINGS frame: the server's preface, so nghttp2 does not hold requests back waiting for one. */
const emptySettings = Buffer.from('000000040000000000', 'hex');

/** The header blocks of a client's frames, in order: HEADERS payloads (padding and priority cut) + CONTINUATIONs. */
class BlockCollector {
  readonly blocks: Buffer[] = [];
  #parts: Buffer[] | undefined;

  push(frame: Frame): void {
    if (frame.type === frameHeaders) {
      let payload = frame.payload;
      if (frame.flags & flagPadded) payload = payload.subarray(1, payload.length - payload[0]!);
      if (frame.flags & flagPriority) payload = payload.subarray(5);
      this.#parts = [payload];
    } else if (frame.type === frameContinuation) {
      expect(this.#parts, 'CONTINUATION without HEADERS').toBeDefined();
      this.#parts!.push(frame.payload);
    } else return;
    if (frame.flags & flagEndHeaders) {
      this.blocks.push(Buffer.concat(this.#parts!));
      this.#parts = undefined;
    }
  }
}

/** A TCP server that answers nothing but an empty SETTINGS frame and records its one client's header blocks. */
interface Capture {
  port: number;
  /** Resolves with the first `count` header blocks the client sent. */
  blocks(count: number): Promise<Buffer[]>;
  close(): void;
}

const open: (() => void)[] = [];
afterEach(() => open.splice(0).forEach((close) => close()));

async function capture(): Promise<Capture> {
  const collector = new BlockCollector();
  let wake = (): void => {};
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    if (sockets.length > 1) return void socket.destroy(); // one connection: one dynamic table
    socket.write(emptySettings);
    const reader = new FrameReader();
    socket.on('data', (chunk: Buffer) => {
      for (const frame of reader.push(chunk)) collector.push(frame);
      wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = (): void => {
    sockets.forEach((s) => s.destroy());
    server.close();
  };
  open.push(close);
  return {
    port: (server.address() as net.AddressInfo).port,
    blocks: (count) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`only ${collector.blocks.length} of ${count} header blocks arrived`)), 20_000);
        wake = () => {
          if (collector.blocks.length < count) return;
          clearTimeout(timer);
          resolve(collector.blocks.slice(0, count));
        };
        wake();
      }),
    close,
  };
}

function connect(port: number): http2.ClientHttp2Session {
  const client = http2.connect(`http://127.0.0.1:${port}`);
  client.on('error', () => {});
  open.push(() => client.destroy());
  return client;
}

/** A random header list: names from a small pool (so they repeat), values short and repeated, long, or odd bytes. */
function randomHeaders(rng: Prng): { headers: http2.OutgoingHttpHeaders; expected: [string, string][] } {
  const method = ['Range', 'Put', 'Txn', 'DeleteRange'][rng.int(4)]!;
  const path = `/etcdserverpb.KV/${method}${rng.int(3) === 0 ? `?n=${rng.int(1000)}` : ''}`;
  const headers: http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': path };
  const expected: [string, string][] = [];
  const sensitive: string[] = [];
  const fields = rng.int(12);
  for (let f = 0; f < fields; f++) {
    const name = `x-${['token', 'trace', 'grpc-timeout', 'agent', 'z', `n${rng.int(40)}`][rng.int(6)]}`;
    if (name in headers) continue;
    const count = rng.int(5) === 0 ? 2 + rng.int(3) : 1;
    const values = Array.from({ length: count }, () => randomValue(rng));
    headers[name] = count === 1 ? values[0]! : values;
    for (const v of values) expected.push([name, v]);
    if (rng.int(8) === 0) sensitive.push(name);
  }
  if (sensitive.length > 0) (headers as Record<symbol, unknown>)[http2.sensitiveHeaders] = sensitive;
  return { headers, expected };
}

function randomValue(rng: Prng): string {
  const kind = rng.int(10);
  if (kind < 4) return ['1S', '100m', 'grpc-go/1.26.0', 'abc', 'application/grpc'][rng.int(5)]!; // repeats: indexed
  const length = kind === 9 ? 1000 + rng.int(6000) : rng.int(60); // long ones do not fit, or evict everything
  let value = '';
  for (let i = 0; i < length; i++) {
    const odd = kind === 8; // bytes 0x80-0xff: longer in Huffman, so sent raw
    value += String.fromCharCode(odd ? 0x80 + rng.int(128) : 0x21 + rng.int(94));
  }
  return value;
}

/** The regular (non-pseudo) fields, and the pseudo ones as a map: nghttp2 sends pseudo-headers first. */
function split(fields: string[]): { pseudo: Map<string, string>; regular: [string, string][] } {
  const pseudo = new Map<string, string>();
  const regular: [string, string][] = [];
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i]!.startsWith(':')) pseudo.set(fields[i]!, fields[i + 1]!);
    else regular.push([fields[i]!, fields[i + 1]!]);
  }
  return { pseudo, regular };
}

describe('HpackDecoder against nghttp2 (node:http2 client)', () => {
  const seeds = process.env.HPACK_SEED ? [Number(process.env.HPACK_SEED)] : [1, 2, 3];
  it.each(seeds)('decodes every request of a connection in order (seed %i)', async (seed) => {
    const rng = new Prng(seed);
    const requests = 80;
    const c = await capture();
    const client = connect(c.port);
    const sent = Array.from({ length: requests }, () => randomHeaders(rng));
    // One request with ~40 KB of headers: more than a 16 KB frame, so HEADERS + CONTINUATION.
    const [b, c2] = ['b'.repeat(20_000), 'c'.repeat(20_000)];
    sent.push({ headers: { ':method': 'POST', ':path': '/big', 'x-big': b, 'x-big2': c2 }, expected: [['x-big', b], ['x-big2', c2]] });
    for (const { headers } of sent) client.request(headers, { endStream: true }).on('error', () => {});
    const blocks = await c.blocks(sent.length);
    const decoder = new HpackDecoder(1024 * 1024);
    for (const [i, block] of blocks.entries()) {
      const { fields, tooLarge } = decoder.decode(block);
      const { pseudo, regular } = split(fields);
      const where = `seed ${seed}, request ${i}`;
      expect(tooLarge, where).toBe(false);
      expect(regular, where).toEqual(sent[i]!.expected);
      const { headers } = sent[i]!;
      expect([pseudo.get(':method'), pseudo.get(':path'), pseudo.get(':scheme')], where).toEqual([headers[':method'], headers[':path'], 'http']);
      expect(pseudo.get(':authority'), where).toMatch(/^127\.0\.0\.1:\d+$/);
    }
    expect(decoder.tableLength, `seed ${seed}: nghttp2 indexed something`).toBeGreaterThan(0);
  });
});

describe('HpackDecoder against a @grpc/grpc-js client', () => {
  it('decodes unary calls with metadata and deadlines, as a gRPC server sees them', async () => {
    const seed = 4;
    const rng = new Prng(seed);
    const c = await capture();
    const grpcClient = new grpc.Client(`127.0.0.1:${c.port}`, grpc.credentials.createInsecure());
    const calls = 40;
    const expected: [string, string][][] = [];
    for (let i = 0; i < calls; i++) {
      const metadata = new grpc.Metadata();
      const pairs: [string, string][] = [];
      for (let m = rng.int(4); m > 0; m--) {
        const pair: [string, string] = [`x-meta-${rng.int(3)}`, randomValue(rng).replace(/[^\x21-\x7e]/g, 'q')];
        if (pairs.some(([k]) => k === pair[0])) continue;
        metadata.set(pair[0], pair[1]);
        pairs.push(pair);
      }
      expected.push(pairs);
      const deadline = Date.now() + 60_000 + rng.int(3_600_000);
      const same = (b: Buffer): Buffer => b;
      grpcClient.makeUnaryRequest(`/etcdserverpb.KV/Range${i}`, same, same, Buffer.alloc(0), metadata, { deadline }, () => {});
    }
    try {
      const blocks = await c.blocks(calls);
      const decoder = new HpackDecoder(1024 * 1024);
      for (const [i, block] of blocks.entries()) {
        const { pseudo, regular } = split(decoder.decode(block).fields);
        const where = `seed ${seed}, call ${i}`;
        expect(pseudo.get(':path'), where).toBe(`/etcdserverpb.KV/Range${i}`);
        const byName = new Map(regular);
        expect(byName.get('content-type'), where).toBe('application/grpc');
        expect(byName.get('te'), where).toBe('trailers');
        expect(byName.get('grpc-timeout'), where).toMatch(/^\d+[HMSmun]$/);
        expect(byName.get('user-agent'), where).toMatch(/^grpc-node-js\//);
        expect(regular.filter(([k]) => k.startsWith('x-meta-')), where).toEqual(expected[i]);
      }
    } finally {
      grpcClient.close();
    }
  });
});
