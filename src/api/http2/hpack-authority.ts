/**
 * Just enough HTTP/2 + HPACK to repair one header. etcdctl 3.4 (grpc-go 1.26) dials per-endpoint calls
 * (endpoint status, defrag, hashkv, move-leader) with target "passthrough:///http://host:port" and sends that
 * whole string as `:authority`. Go's HTTP/2 server accepts it; Node's nghttp2 resets the stream with
 * PROTOCOL_ERROR (an authority may not contain "/"). We rewrite a literal `:authority` that carries a scheme
 * to the bare host:port before nghttp2 sees the header block.
 *
 * Why the rewrite is safe without tracking the HPACK dynamic table: only literal fields whose name is static
 * entry 1 (`:authority`) change, and only by getting shorter. The decoder's table entry is then smaller than
 * the encoder's, so the decoder never evicts an entry the encoder still references, and indexes (counted from
 * the newest entry) agree on every entry the encoder can still use.
 */

import { huffmanDecode } from './huffman.js';

/** Re-exported for the authority-fix tests, which check it against nghttp2's encoder. */
export { huffmanDecode };

/** HPACK integer with an n-bit prefix at `pos`; undefined when the block ends first. */
function readInt(buf: Uint8Array, pos: number, prefixBits: number): [number, number] | undefined {
  if (pos >= buf.length) return undefined;
  const max = (1 << prefixBits) - 1;
  let value = buf[pos]! & max;
  pos++;
  if (value < max) return [value, pos];
  let shift = 0;
  for (;;) {
    if (pos >= buf.length || shift > 28) return undefined;
    const b = buf[pos++]!;
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if ((b & 0x80) === 0) return [value, pos];
  }
}

function readString(buf: Uint8Array, pos: number): [string, number] | undefined {
  const huffman = pos < buf.length && (buf[pos]! & 0x80) !== 0;
  const n = readInt(buf, pos, 7);
  if (!n || n[1] + n[0] > buf.length) return undefined;
  const raw = buf.subarray(n[1], n[1] + n[0]);
  const text = huffman ? huffmanDecode(raw) : Buffer.from(raw).toString('latin1');
  return text === undefined ? undefined : [text, n[1] + n[0]];
}

function encodeRawString(text: string): Buffer {
  const bytes = Buffer.from(text, 'latin1');
  const prefix: number[] = [];
  if (bytes.length < 127) prefix.push(bytes.length);
  else {
    prefix.push(127);
    let rest = bytes.length - 127;
    while (rest >= 128) {
      prefix.push((rest % 128) | 0x80);
      rest = Math.floor(rest / 128);
    }
    prefix.push(rest);
  }
  return Buffer.concat([Buffer.from(prefix), bytes]);
}

/** "http://h:p" → "h:p"; a value without a scheme is left alone (undefined). */
export function repairAuthority(value: string): string | undefined {
  const at = value.indexOf('://');
  if (at < 0) return undefined;
  const rest = value.slice(at + 3);
  const slash = rest.indexOf('/');
  const bare = slash < 0 ? rest : rest.slice(0, slash);
  return bare.length > 0 && bare.length < value.length ? bare : undefined;
}

export interface BlockScan {
  /** The first `:authority` literal's value, if the block has one. */
  authority?: string;
  /** The block with every schemed `:authority` literal repaired; the input itself when nothing changed. */
  block: Buffer;
}

/** Walks one complete header block. A block it cannot parse is returned unchanged (nghttp2 will judge it). */
export function scanHeaderBlock(block: Buffer): BlockScan {
  const parts: Buffer[] = [];
  let copied = 0;
  let authority: string | undefined;
  let pos = 0;
  while (pos < block.length) {
    const b = block[pos]!;
    if (b & 0x80 || (b & 0xe0) === 0x20) {
      const n = readInt(block, pos, b & 0x80 ? 7 : 5); // indexed field, or table size update
      if (!n) return { block };
      pos = n[1];
      continue;
    }
    const index = readInt(block, pos, b & 0x40 ? 6 : 4);
    if (!index) return { block };
    pos = index[1];
    let name: string | undefined;
    if (index[0] === 0) {
      const n = readString(block, pos);
      if (!n) return { block };
      [name, pos] = n;
    }
    const valueAt = pos;
    const value = readString(block, pos);
    if (!value) return { block };
    pos = value[1];
    if (index[0] !== 1 && name !== ':authority') continue;
    authority ??= value[0];
    const repaired = repairAuthority(value[0]);
    if (repaired === undefined) continue;
    parts.push(block.subarray(copied, valueAt), encodeRawString(repaired));
    copied = pos;
  }
  if (parts.length === 0) return authority === undefined ? { block } : { authority, block };
  parts.push(block.subarray(copied));
  const out = Buffer.concat(parts);
  return authority === undefined ? { block: out } : { authority, block: out };
}
