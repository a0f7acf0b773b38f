/**
 * What a gRPC request's HTTP/2 headers mean to the call: its metadata (the grpc-js `Metadata.get` shape the
 * services read: `token`, `authorization`, `hasleader`, `client-api-version`), its deadline (`grpc-timeout`),
 * and how a status message goes back (`grpc-message`, percent-encoded).
 */
import type { IncomingHttpHeaders } from 'node:http2';

export type MetadataValue = string | Buffer;

/**
 * A request's custom metadata read straight off Node's header object: no copy at construction (most calls
 * read two or three keys). `-bin` keys are base64 and come back as Buffers, split at commas (a key sent twice
 * arrives comma-joined), as grpc-js' Metadata.fromHttp2Headers does; other values come as they are.
 */
export class HeaderMetadata {
  readonly #headers: IncomingHttpHeaders;

  constructor(headers: IncomingHttpHeaders) {
    this.#headers = headers;
  }

  get(key: string): MetadataValue[] {
    const k = key.toLowerCase();
    if (k.startsWith(':') || reserved.has(k)) return [];
    const v = this.#headers[k];
    if (v === undefined) return [];
    const values = Array.isArray(v) ? v : [v];
    if (k.endsWith('-bin')) return values.flatMap((s) => s.split(',')).map((s) => Buffer.from(s.trim(), 'base64'));
    return values;
  }
}

/** Headers of the transport, not metadata (grpc-js removes the same before a handler sees them). */
const reserved = new Set(['grpc-timeout', 'grpc-encoding', 'grpc-accept-encoding', 'accept-encoding', 'te', 'content-type']);

const timeoutUnitsMs: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * `grpc-timeout` (gRPC over HTTP/2: at most 8 digits and a unit) in milliseconds, or undefined when absent;
 * NaN for a value that is not one (the call then fails INTERNAL, as grpc-js answers it).
 */
export function timeoutMs(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const m = /^(\d{1,8})\s*([HMSmun])$/.exec(Array.isArray(header) ? (header[0] ?? '') : header);
  if (m === null) return NaN;
  return Math.floor(Number(m[1]) * timeoutUnitsMs[m[2]!]!);
}

/**
 * gRPC's percent-encoding of `grpc-message`: UTF-8 bytes outside printable ASCII, and '%', become %XX. Go
 * and grpc-js clients decode it; etcd's error strings are plain ASCII and pass unchanged.
 */
export function encodeStatusMessage(message: string): string {
  if (/^[\x20-\x24\x26-\x7e]*$/.test(message)) return message;
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
