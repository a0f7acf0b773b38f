/**
 * Wire framing for peer streams: `u32 length (big-endian) | u8 type | payload`, where length counts the type
 * byte and the payload. Payloads are msgpack (one shared Packr, maps not records, bigints as 64-bit
 * integers) except snapshot chunks, which are raw bytes so a chunk is written without being copied.
 *
 * Worked example: a Messages frame whose msgpack payload is 10 bytes is
 *   00 00 00 0b | 05 | <10 payload bytes>          (0x0b = 11 = 1 type byte + 10)
 */
import { Packr } from 'msgpackr';
import { assert, peerFrameBytesMax } from '../base/index.js';

export const FrameType = {
  /** server → client: { nonce, id, clusterId } */
  Hello: 1,
  /** client → server: { kind, from, to, clusterId, nonce, mac } */
  Auth: 2,
  /** server → client: { id, mac } */
  Welcome: 3,
  /** either way, then close: { reason } */
  Refused: 4,
  /** Message[] */
  Messages: 5,
  /** { message (MsgSnap with empty snapshot data), totalBytes } */
  SnapHeader: 6,
  /** raw bytes */
  SnapChunk: 7,
  /** {} */
  SnapDone: 8,
  /** { ok, error? } */
  SnapAck: 9,
  /** PeerRequest */
  Request: 10,
  /** PeerResponse */
  Response: 11,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

const frameTypes = new Set<number>(Object.values(FrameType));

export const frameHeaderBytes = 5;

/**
 * copyBuffers: decoded byte arrays get their own memory, so a small entry kept in the Raft log does not pin
 * a whole multi-megabyte frame buffer.
 */
export const packr = new Packr({ useRecords: false, copyBuffers: true, int64AsType: 'bigint' });

export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

export interface Frame {
  type: FrameType;
  payload: Buffer;
}

/** The 5-byte header for a frame of `payloadBytes`. */
export function frameHeader(type: FrameType, payloadBytes: number): Buffer {
  assert(payloadBytes + 1 <= peerFrameBytesMax, `frame of ${payloadBytes} bytes exceeds the peer frame limit`);
  const header = Buffer.allocUnsafe(frameHeaderBytes);
  header.writeUInt32BE(payloadBytes + 1, 0);
  header.writeUInt8(type, 4);
  return header;
}

/** A whole frame with a msgpack payload. */
export function encodeFrame(type: FrameType, value: unknown): Buffer {
  const payload = packr.pack(value);
  return Buffer.concat([frameHeader(type, payload.length), payload]);
}

export function decodePayload(frame: Frame): unknown {
  try {
    return packr.unpack(frame.payload);
  } catch (err) {
    throw new ProtocolError(`undecodable frame payload (type ${frame.type}): ${(err as Error).message}`);
  }
}

/** A frame's payload, or undefined when it is not msgpack: the caller refuses it as malformed. */
export function decodeOrUndefined(frame: Frame): unknown {
  try {
    return packr.unpack(frame.payload);
  } catch {
    return undefined;
  }
}

/**
 * Incremental frame parser. Chunks are kept in a list and joined once per frame, so a 1 MiB chunk that
 * arrives in 64 KiB reads costs one copy, not sixteen. Frames are parsed one at a time (`next()`), so a
 * connection can raise `maxBytes` after its handshake and the bytes that followed the handshake in the same
 * read are judged by the new limit, not the old one.
 */
export class FrameReader {
  #chunks: Buffer[] = [];
  #buffered = 0;
  /** The largest frame (type byte and payload) accepted; a longer length prefix is a protocol error. */
  maxBytes: number;

  constructor(maxBytes = peerFrameBytesMax) {
    this.maxBytes = maxBytes;
  }

  /** Bytes received and not yet returned as frames. */
  get buffered(): number {
    return this.#buffered;
  }

  append(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
  }

  /** Feeds bytes; returns the complete frames they finish. Throws ProtocolError on a bad header. */
  push(chunk: Buffer): Frame[] {
    this.append(chunk);
    const frames: Frame[] = [];
    for (;;) {
      const frame = this.next();
      if (frame === undefined) return frames;
      frames.push(frame);
    }
  }

  /** The next complete frame, or undefined. Throws ProtocolError on a bad header. */
  next(): Frame | undefined {
    if (this.#buffered < frameHeaderBytes) return undefined;
    const head = this.#peek(frameHeaderBytes);
    const length = head.readUInt32BE(0);
    const type = head.readUInt8(4);
    // Checked before buffering the body: a garbage or hostile length never causes a huge allocation.
    if (length < 1) throw new ProtocolError(`bad frame length ${length}`);
    if (length > this.maxBytes) throw new ProtocolError(httpOnPeerPort(head) ?? `frame of ${length} bytes exceeds the limit of ${this.maxBytes}`);
    if (!frameTypes.has(type)) throw new ProtocolError(`unknown frame type ${type}`);
    const total = 4 + length;
    if (this.#buffered < total) return undefined;
    const joined = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks, this.#buffered);
    const payload = joined.subarray(frameHeaderBytes, total);
    const rest = joined.subarray(total);
    this.#chunks = rest.length > 0 ? [rest] : [];
    this.#buffered = rest.length;
    return { type: type as FrameType, payload };
  }

  /** Forgets whatever was buffered (a connection being closed). */
  clear(): void {
    this.#chunks = [];
    this.#buffered = 0;
  }

  #peek(bytes: number): Buffer {
    const first = this.#chunks[0] as Buffer;
    if (first.length >= bytes) return first;
    const joined = Buffer.concat(this.#chunks, this.#buffered);
    this.#chunks = [joined];
    return joined;
  }
}

/** HTTP/2's connection preface ("PRI * HTTP/2.0") and HTTP/1 request lines, as a peer frame header would read them. */
const httpStarts: ReadonlyArray<[prefix: string, what: string]> = [
  ['PRI ', 'an HTTP/2 client (gRPC, etcdctl, a join through the peer URL)'],
  ['GET ', 'an HTTP/1 client'],
  ['POST', 'an HTTP/1 client'],
  ['PUT ', 'an HTTP/1 client'],
  ['HEAD', 'an HTTP/1 client'],
];

/** A client that dialled the peer port instead of the client port: say so instead of "bad frame length 1347569952". */
function httpOnPeerPort(head: Buffer): string | undefined {
  const start = head.subarray(0, 4).toString('latin1');
  const what = httpStarts.find(([prefix]) => prefix === start)?.[1];
  return what === undefined ? undefined : `${what} reached the peer port, which speaks only the peer protocol; clients use the client URL`;
}
