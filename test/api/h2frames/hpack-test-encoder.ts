/**
 * A test-only HPACK encoder: enough to build blocks the server's encoder never writes (Huffman strings, literals
 * with incremental indexing, table size updates, malformed bytes) for the decoder's tests and benchmark.
 */
import { codeLengths, huffmanCodes } from '../../../src/api/http2/huffman.js';

/** RFC 7541 5.2: `text`'s latin1 bytes Huffman-coded, padded with one-bits. */
export function huffmanEncode(text: string): Buffer {
  const out: number[] = [];
  let acc = 0; // pending bits, at most 7 + 30: kept below 2^53 by flushing bytes as they fill
  let bits = 0;
  for (const byte of Buffer.from(text, 'latin1')) {
    const length = codeLengths[byte]!;
    acc = acc * 2 ** length + huffmanCodes[byte]!;
    bits += length;
    while (bits >= 8) {
      bits -= 8;
      const top = Math.floor(acc / 2 ** bits);
      out.push(top);
      acc -= top * 2 ** bits;
    }
  }
  if (bits > 0) out.push(acc * 2 ** (8 - bits) + (2 ** (8 - bits) - 1));
  return Buffer.from(out);
}

/** RFC 7541 5.1: `value` with an n-bit prefix, after the high bits `pattern`. */
export function integer(pattern: number, prefixBits: number, value: number): Buffer {
  const prefixMax = 2 ** prefixBits - 1;
  if (value < prefixMax) return Buffer.from([pattern | value]);
  const out = [pattern | prefixMax];
  let rest = value - prefixMax;
  while (rest >= 128) {
    out.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}

/** RFC 7541 5.2: a string literal, raw or Huffman-coded. */
export function string(text: string, huffman: boolean): Buffer {
  const bytes = huffman ? huffmanEncode(text) : Buffer.from(text, 'latin1');
  return Buffer.concat([integer(huffman ? 0x80 : 0, 7, bytes.length), bytes]);
}

/** 6.2.1 literal with incremental indexing; `name` a static or dynamic index, or a new name. */
export function literalIndexed(name: number | string, value: string, huffman = false): Buffer {
  return literal(0x40, 6, name, value, huffman);
}

/** 6.2.2 literal without indexing. */
export function literalNotIndexed(name: number | string, value: string, huffman = false): Buffer {
  return literal(0x00, 4, name, value, huffman);
}

/** 6.2.3 literal never indexed. */
export function literalNeverIndexed(name: number | string, value: string, huffman = false): Buffer {
  return literal(0x10, 4, name, value, huffman);
}

function literal(pattern: number, prefixBits: number, name: number | string, value: string, huffman: boolean): Buffer {
  const head = typeof name === 'number' ? [integer(pattern, prefixBits, name)] : [Buffer.from([pattern]), string(name, huffman)];
  return Buffer.concat([...head, string(value, huffman)]);
}

/** 6.1 indexed field. */
export function indexed(index: number): Buffer {
  return integer(0x80, 7, index);
}

/** 6.3 dynamic table size update. */
export function sizeUpdate(bytes: number): Buffer {
  return integer(0x20, 5, bytes);
}
