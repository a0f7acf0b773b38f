/**
 * Hand-built wire bytes for the fuzzer: HTTP/1.1 requests, HTTP/2 gRPC calls (preface, SETTINGS, an HPACK
 * block of plain literals, DATA with the gRPC length prefix), and peer-transport frames. Built by hand, not
 * by a client library, so a case can break any field of any layer.
 */
import { encodeFrame } from '../../src/peer/frame.js';

export const h2Preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const h2Type = { data: 0, headers: 1, rstStream: 3, settings: 4, ping: 6, goaway: 7, windowUpdate: 8, continuation: 9 } as const;
export const h2Flag = { endStream: 0x1, ack: 0x1, endHeaders: 0x4 } as const;

export function h2Frame(type: number, flags: number, streamId: number, payload: Buffer, declaredBytes = payload.length): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(declaredBytes & 0xffffff, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId >>> 0, 5);
  return Buffer.concat([head, payload]);
}

/** HPACK integer with an n-bit prefix (RFC 7541 §5.1). */
function hpackInt(value: number, prefixBits: number, firstByteFlags: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([firstByteFlags | value]);
  const out = [firstByteFlags | max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}

/** A header block of "literal without indexing, new name" fields, no Huffman coding. */
export function hpackBlock(headers: Array<[string, string]>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of headers) {
    const n = Buffer.from(name, 'latin1');
    const v = Buffer.from(value, 'latin1');
    parts.push(Buffer.from([0]), hpackInt(n.length, 7, 0), n, hpackInt(v.length, 7, 0), v);
  }
  return Buffer.concat(parts);
}

export function grpcHeaders(path: string): Array<[string, string]> {
  return [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', path],
    [':authority', '127.0.0.1'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
  ];
}

/** The gRPC message prefix: compressed flag and a 4-byte length (declared, which a case may lie about). */
export function grpcMessage(message: Buffer, declaredBytes = message.length): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(declaredBytes >>> 0, 1);
  return Buffer.concat([head, message]);
}

/**
 * A whole gRPC call on stream 1, as a client sends it: preface, SETTINGS, the ACK of the server's SETTINGS
 * (sent blind: the server expects it), HEADERS, and the messages in DATA frames, the last one ending the stream.
 */
export function grpcCall(path: string, messages: Buffer[]): Buffer {
  const frames = [
    h2Preface,
    h2Frame(h2Type.settings, 0, 0, Buffer.alloc(0)),
    h2Frame(h2Type.settings, h2Flag.ack, 0, Buffer.alloc(0)),
    h2Frame(h2Type.headers, h2Flag.endHeaders, 1, hpackBlock(grpcHeaders(path))),
  ];
  messages.forEach((m, i) => frames.push(h2Frame(h2Type.data, i === messages.length - 1 ? h2Flag.endStream : 0, 1, grpcMessage(m))));
  if (messages.length === 0) frames.push(h2Frame(h2Type.data, h2Flag.endStream, 1, Buffer.alloc(0)));
  return Buffer.concat(frames);
}

export function http1Request(method: string, path: string, headers: Array<[string, string]>, body: Buffer): Buffer {
  const head = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...headers.map(([k, v]) => `${k}: ${v}`)].join('\r\n');
  return Buffer.concat([Buffer.from(`${head}\r\n\r\n`, 'latin1'), body]);
}

/** A body in chunked transfer encoding, cut into `pieces` chunks. */
export function chunked(body: Buffer, pieces: number): Buffer {
  const out: Buffer[] = [];
  const size = Math.max(1, Math.ceil(body.length / Math.max(1, pieces)));
  for (let at = 0; at < body.length; at += size) {
    const part = body.subarray(at, at + size);
    out.push(Buffer.from(`${part.length.toString(16)}\r\n`, 'latin1'), part, Buffer.from('\r\n', 'latin1'));
  }
  out.push(Buffer.from('0\r\n\r\n', 'latin1'));
  return Buffer.concat(out);
}

/** A peer-transport frame: `u32 length | u8 type | msgpack payload`. */
export function peerFrame(type: number, value: unknown): Buffer {
  return encodeFrame(type as never, value);
}
