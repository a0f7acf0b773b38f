/**
 * Hands accepted connections to grpc-js, repairing etcdctl 3.4's schemed `:authority` (see hpack-authority.ts).
 *
 * Every connection is looked at until its first request's header block: we send an empty SETTINGS frame at
 * once (grpc-go waits for the server's preface before its first request) and drop the client's ACK of it, so
 * nghttp2 never learns of it. Then:
 *   - authority fine (every modern client): the bytes read so far are put back and the raw socket goes to
 *     grpc-js: the native fast path, no copying afterwards;
 *   - schemed authority: the connection goes to grpc-js through a Duplex that repairs every later header
 *     block too (a slower JS path, only for those clients). grpc-js cannot see a Duplex's TLS certificate, so
 *     each request of a TLS connection with a verified one is tagged with its connection (repaired-peers.ts).
 * A client that sends no request within `sniffMs` is handed over natively as is.
 */
import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { scanHeaderBlock } from './hpack-authority.js';
import { FrameReader, type Frame } from './frame-reader.js';
import { tagRepairedConnection } from './repaired-peers.js';

const emptySettings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
const frameType = { headers: 1, settings: 4, continuation: 9 } as const;
const flag = { ack: 0x1, endHeaders: 0x4, padded: 0x8, priority: 0x20 } as const;
/** nghttp2's default SETTINGS_MAX_FRAME_SIZE, which grpc-js keeps. */
const frameBytesMax = 16_384;
/** A header block larger than this is not a gRPC request we can help; pass it on untouched. */
const blockBytesMax = 1 << 20;

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/**
 * Collects HEADERS + CONTINUATION frames into one block and re-emits it, repaired, as fresh frames. From the
 * first schemed authority on (the connection will be repaired), each block that opens a stream gets the
 * connection's tag (repaired-peers.ts) when `tag` gives one.
 */
class HeaderAssembler {
  readonly #tag: () => Buffer | undefined;
  #frames: Frame[] = [];
  #fragments: Buffer[] = [];
  #bytes = 0;
  /** undefined until a schemed authority is seen; then the tag, or null when the connection has none. */
  #field: Buffer | null | undefined;
  #lastStreamId = 0;

  constructor(tag: () => Buffer | undefined) {
    this.#tag = tag;
  }

  get open(): boolean {
    return this.#frames.length > 0;
  }

  /** Returns the frames to forward (possibly none yet) and the first authority seen in a completed block. */
  add(f: Frame): { out: Buffer[]; authority?: string } {
    this.#frames.push(f);
    let body = f.payload;
    if (f.type === frameType.headers) {
      const pad = f.flags & flag.padded ? body[0]! : 0;
      body = body.subarray(f.flags & flag.padded ? 1 : 0, body.length - pad);
      if (f.flags & flag.priority) body = body.subarray(5);
    }
    this.#fragments.push(body);
    this.#bytes += body.length;
    if (!(f.flags & flag.endHeaders)) {
      if (this.#bytes <= blockBytesMax) return { out: [] };
      return { out: this.#flushRaw() };
    }
    const first = this.#frames[0]!;
    const scan = scanHeaderBlock(Buffer.concat(this.#fragments));
    const frames = this.#frames;
    this.#frames = [];
    this.#fragments = [];
    this.#bytes = 0;
    if (first.type !== frameType.headers) return { out: frames.map((x) => x.raw) };
    const priority = first.flags & flag.priority ? first.payload.subarray(first.flags & flag.padded ? 1 : 0).subarray(0, 5) : undefined;
    if (this.#field === undefined && scan.authority?.includes('://') === true) this.#field = this.#tag() ?? null;
    // A client opens streams with ever larger ids; a later block on an open stream is its trailers.
    const opens = first.streamId > this.#lastStreamId;
    if (opens) this.#lastStreamId = first.streamId;
    const block = opens && this.#field ? Buffer.concat([scan.block, this.#field]) : scan.block;
    const out = reframe(first, block, priority);
    return scan.authority === undefined ? { out } : { out, authority: scan.authority };
  }

  #flushRaw(): Buffer[] {
    const out = this.#frames.map((x) => x.raw);
    this.#frames = [];
    this.#fragments = [];
    this.#bytes = 0;
    return out;
  }
}

function reframe(first: Frame, block: Buffer, priority: Buffer | undefined): Buffer[] {
  const keep = first.flags & (0x1 | flag.priority); // END_STREAM, PRIORITY
  const payload = priority ? Buffer.concat([priority, block]) : block;
  const out: Buffer[] = [];
  let at = Math.min(payload.length, frameBytesMax);
  out.push(frame(frameType.headers, keep | (at === payload.length ? flag.endHeaders : 0), first.streamId, payload.subarray(0, at)));
  while (at < payload.length) {
    const end = Math.min(payload.length, at + frameBytesMax);
    out.push(frame(frameType.continuation, end === payload.length ? flag.endHeaders : 0, first.streamId, payload.subarray(at, end)));
    at = end;
  }
  return out;
}

/** The slow path: a Duplex over the socket that repairs every header block from the client. */
class RepairingConnection extends Duplex {
  readonly #socket: Socket;
  readonly #reader: FrameReader;
  readonly #headers: HeaderAssembler;

  constructor(socket: Socket, reader: FrameReader, headers: HeaderAssembler, pending: Buffer[]) {
    super();
    this.#socket = socket;
    this.#reader = reader;
    this.#headers = headers;
    for (const b of pending) this.push(b);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('end', () => this.push(null));
    socket.on('close', () => this.destroy());
    socket.on('error', (err) => this.destroy(err));
    this.#onData(reader.takeRest());
  }

  #onData(chunk: Buffer): void {
    if (chunk.length === 0) return;
    for (const f of this.#reader.push(chunk)) {
      const out = this.#headers.open || f.type === frameType.headers ? this.#headers.add(f).out : [f.raw];
      for (const b of out) if (!this.push(b)) this.#socket.pause();
    }
  }

  override _read(): void {
    this.#socket.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.#socket.write(chunk, done);
  }

  override _final(done: (err?: Error | null) => void): void {
    this.#socket.end(done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.#socket.destroy();
    done(err);
  }
}

/** Bytes buffered while looking before we give up and hand the connection over untouched. */
const sniffBytesMax = 1 << 20;

/**
 * Looks at the first request of `socket`, then gives grpc-js either the socket itself or a repairing Duplex.
 * A peer that has not acknowledged our SETTINGS within `sniffMs` is not an HTTP/2 client: it is dropped.
 */
export function handOver(socket: Socket, inject: (connection: Duplex) => void, sniffMs = 10_000): void {
  socket.setNoDelay(true);
  const reader = new FrameReader();
  const headers = new HeaderAssembler(() => tagRepairedConnection(socket));
  const kept: Buffer[] = [];
  let buffered = 0;
  let ackDropped = false;
  let verdict: 'native' | 'repair' | undefined;
  let settled = false;
  const timer = setTimeout(() => {
    if (!ackDropped) return void socket.destroy();
    verdict ??= 'native';
    settle();
  }, sniffMs);
  timer.unref();
  const settle = (): void => {
    if (settled || verdict === undefined || !ackDropped) return;
    settled = true;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.pause();
    const pending = [reader.prefix, ...kept];
    if (verdict === 'native') {
      socket.unshift(Buffer.concat([...pending, reader.takeRest()]));
      inject(socket);
    } else {
      inject(new RepairingConnection(socket, reader, headers, pending));
    }
  };
  const onData = (chunk: Buffer): void => {
    buffered += chunk.length;
    for (const f of reader.push(chunk)) {
      if (!ackDropped && f.type === frameType.settings && f.flags & flag.ack) {
        ackDropped = true; // the ACK of our early SETTINGS: nghttp2 never sent it, so it must not see it
        continue;
      }
      if (verdict !== 'native' && (headers.open || f.type === frameType.headers)) {
        const { out, authority } = headers.add(f);
        kept.push(...out);
        if (verdict === undefined && out.length > 0) verdict = authority?.includes('://') ? 'repair' : 'native';
        continue;
      }
      kept.push(f.raw);
    }
    if (reader.notHttp2 || buffered > sniffBytesMax) {
      // Let nghttp2 refuse it (or serve it) as it would without us.
      verdict = 'native';
      ackDropped = true;
    }
    settle();
  };
  socket.on('data', onData);
  socket.once('error', () => socket.destroy());
  socket.write(emptySettings);
}
