/**
 * HPACK (RFC 7541) for our own HTTP/2 gRPC server: a complete decoder for request header blocks, and encoders
 * for the few response fields we send, which use neither the dynamic table nor Huffman coding (so the encoder
 * has no state, and never asks the client's decoder to keep anything).
 *
 * The decoder's contract with the connection:
 * - decode() takes one complete header block (HEADERS + CONTINUATION payloads, joined) and returns its fields
 *   as a flat list [name, value, name, value, ...], in order. Names are returned as sent (the connection rejects
 *   uppercase names, RFC 7540 8.1.2); values are latin1 strings, one char per byte, as Node gives them.
 * - Any malformed block throws HpackError; the connection then ends with GOAWAY COMPRESSION_ERROR, because the
 *   dynamic table can no longer be trusted to match the client's (RFC 7540 4.3). The decoder is unusable after.
 * - A block whose header list is larger than headerListBytesMax (RFC 7540 6.5.2: name + value + 32 per field)
 *   is still decoded to its end, so the dynamic table stays in step with the client's encoder, but its fields
 *   stop being collected at the limit and `tooLarge` is set: the connection refuses that one stream.
 *
 * Memory: the dynamic table holds at most tableBytesMax bytes of strings (4096: SETTINGS_HEADER_TABLE_SIZE,
 * which we never change from its default); a block's fields are bounded by headerListBytesMax; the strings of a
 * block are bounded by the block, which the connection bounds. Nothing else is kept between blocks.
 */
import { assert } from '../../base/assert.js';
import { huffmanDecode, latin1String } from '../http2/huffman.js';

/** SETTINGS_HEADER_TABLE_SIZE's default (RFC 7540 6.5.2); we never announce another. */
export const headerTableBytesDefault = 4096;
/** RFC 7541 4.1: an entry's size is its name's and value's lengths plus 32 (RFC 7540 6.5.2 sizes a header list so). */
export const entryOverheadBytes = 32;
/** An HPACK integer past this is refused: no length, index or table size of ours comes near it. */
const integerMax = 2 ** 31 - 1;
/** Continuation bytes of one integer: 5 carry 35 bits, more than integerMax needs (a longer one is an attack). */
const integerContinuationBytesMax = 5;

/** A malformed header block: the connection answers with GOAWAY COMPRESSION_ERROR. */
export class HpackError extends Error {
  override name = 'HpackError';
}

export interface DecodedHeaders {
  /** name, value, name, value ...: in the block's order; only those within headerListBytesMax. */
  fields: string[];
  /** The header list passed headerListBytesMax: the stream is to be refused (the table is still in step). */
  tooLarge: boolean;
}

export interface HpackDecoderOptions {
  /** The dynamic table's size limit, SETTINGS_HEADER_TABLE_SIZE as we announced it; RFC 7541's examples use 256. */
  tableBytesMax?: number;
}

/** RFC 7541 Appendix A; index 0 is unused (an index of 0 is an error). */
const staticNames: readonly string[] = [
  '', ':authority', ':method', ':method', ':path', ':path', ':scheme', ':scheme', ':status', ':status', ':status',
  ':status', ':status', ':status', ':status', 'accept-charset', 'accept-encoding', 'accept-language',
  'accept-ranges', 'accept', 'access-control-allow-origin', 'age', 'allow', 'authorization', 'cache-control',
  'content-disposition', 'content-encoding', 'content-language', 'content-length', 'content-location',
  'content-range', 'content-type', 'cookie', 'date', 'etag', 'expect', 'expires', 'from', 'host', 'if-match',
  'if-modified-since', 'if-none-match', 'if-range', 'if-unmodified-since', 'last-modified', 'link', 'location',
  'max-forwards', 'proxy-authenticate', 'proxy-authorization', 'range', 'referer', 'refresh', 'retry-after',
  'server', 'set-cookie', 'strict-transport-security', 'transfer-encoding', 'user-agent', 'vary', 'via',
  'www-authenticate',
];
/** The static entries that have a value; every other one's is empty. */
const staticValuesByIndex: Readonly<Record<number, string>> = {
  2: 'GET', 3: 'POST', 4: '/', 5: '/index.html', 6: 'http', 7: 'https', 8: '200', 9: '204', 10: '206', 11: '304',
  12: '400', 13: '404', 14: '500', 16: 'gzip, deflate',
};
const staticValues: readonly string[] = staticNames.map((_, i) => staticValuesByIndex[i] ?? '');
/** The last static index; dynamic entries follow it, the newest first (RFC 7541 2.3.3). */
export const staticTableLength = staticNames.length - 1;
assert(staticTableLength === 61, 'RFC 7541 has 61 static entries');

const emptyBlock = Buffer.alloc(0);

/**
 * Decodes the header blocks of one connection, in the order they arrived (the dynamic table carries over).
 *
 * The dynamic table is a ring of names and values: `#newest` is the slot of dynamic index 1 (HPACK index 62), the
 * entries before it (wrapping around) are older. An entry takes at least 32 bytes, so the ring needs no more
 * than tableBytesMax / 32 slots. A string's length is its size in bytes: every char is one latin1 byte.
 */
export class HpackDecoder {
  readonly #headerListBytesMax: number;
  /** What the client may grow its table to (SETTINGS_HEADER_TABLE_SIZE as we announced it). */
  readonly #tableBytesLimit: number;
  /** The table's current maximum: the limit, or less after a dynamic table size update (RFC 7541 4.2). */
  #tableBytesMax: number;
  #tableBytes = 0;
  /** The ring: grown by appending up to #slots entries (a new connection allocates nothing), then wrapped. */
  readonly #names: string[] = [];
  readonly #values: string[] = [];
  readonly #slots: number;
  #newest: number;
  #count = 0;
  /** The block being decoded and the position in it. */
  #block: Buffer = emptyBlock;
  #pos = 0;
  /** Set while a block is decoded; still set after an HpackError, when the table is out of step for good. */
  #decoding = false;

  constructor(headerListBytesMax: number, options: HpackDecoderOptions = {}) {
    const listMaxOk = Number.isSafeInteger(headerListBytesMax) && headerListBytesMax > 0;
    assert(listMaxOk, `bad headerListBytesMax ${headerListBytesMax}`);
    for (const key of Object.keys(options)) assert(key === 'tableBytesMax', `unknown HPACK decoder option ${key}`);
    const tableBytes = options.tableBytesMax ?? headerTableBytesDefault;
    const tableBytesOk = Number.isSafeInteger(tableBytes) && tableBytes >= 0 && tableBytes <= integerMax;
    assert(tableBytesOk, `bad tableBytesMax ${tableBytes}`);
    this.#headerListBytesMax = headerListBytesMax;
    this.#tableBytesLimit = tableBytes;
    this.#tableBytesMax = tableBytes;
    this.#slots = Math.max(1, Math.floor(tableBytes / entryOverheadBytes));
    this.#newest = this.#slots - 1; // so the first entry goes to slot 0, and the arrays grow without holes
  }

  /** The dynamic table's size in bytes (RFC 7541 4.1) and entry count: for tests and assertions. */
  get tableBytes(): number {
    return this.#tableBytes;
  }

  get tableLength(): number {
    return this.#count;
  }

  /** Decodes one complete header block; throws HpackError when it is malformed. */
  decode(block: Buffer): DecodedHeaders {
    assert(!this.#decoding, 'HpackDecoder used after an HpackError (the connection must close)');
    this.#decoding = true;
    this.#block = block;
    this.#pos = 0;
    const fields: string[] = [];
    const listBytesMax = this.#headerListBytesMax;
    let listBytes = 0;
    let tooLarge = false;
    let fieldSeen = false;
    const end = block.length;
    while (this.#pos < end) {
      const first = block[this.#pos]!;
      let name: string;
      let value: string;
      if (first >= 0x80) {
        // 6.1 indexed header field: 1xxxxxxx
        const index = this.#integer(7);
        if (index <= staticTableLength) {
          if (index === 0) throw new HpackError('header field index 0');
          name = staticNames[index]!;
          value = staticValues[index]!;
        } else {
          const slot = this.#slot(index);
          name = this.#names[slot]!;
          value = this.#values[slot]!;
        }
      } else if (first >= 0x40) {
        // 6.2.1 literal with incremental indexing: 01xxxxxx
        const index = this.#integer(6);
        name = index === 0 ? this.#string() : this.#nameAt(index);
        value = this.#string();
        this.#insert(name, value);
      } else if (first >= 0x20) {
        // 6.3 dynamic table size update: 001xxxxx, only before the block's first field (4.2)
        if (fieldSeen) throw new HpackError('dynamic table size update after a header field');
        this.#resize(this.#integer(5));
        continue;
      } else {
        // 6.2.2 literal without indexing 0000xxxx, 6.2.3 never indexed 0001xxxx
        const index = this.#integer(4);
        name = index === 0 ? this.#string() : this.#nameAt(index);
        value = this.#string();
      }
      fieldSeen = true;
      if (tooLarge) continue;
      listBytes += name.length + value.length + entryOverheadBytes;
      if (listBytes > listBytesMax) tooLarge = true;
      else fields.push(name, value);
    }
    this.#block = emptyBlock; // hold no reference to the connection's buffer between blocks
    this.#decoding = false;
    return { fields, tooLarge };
  }

  /** The ring slot of HPACK index `index` (> 61), or HpackError when there is no such entry. */
  #slot(index: number): number {
    const age = index - staticTableLength - 1;
    if (age >= this.#count) throw new HpackError(`header field index ${index} past the table (${this.#count} entries)`);
    const slot = this.#newest - age;
    return slot < 0 ? slot + this.#slots : slot;
  }

  #nameAt(index: number): string {
    return index <= staticTableLength ? staticNames[index]! : this.#names[this.#slot(index)]!;
  }

  /** RFC 7541 4.4: evict from the oldest until the entry fits; an entry larger than the table empties it. */
  #insert(name: string, value: string): void {
    const size = name.length + value.length + entryOverheadBytes;
    this.#evictTo(this.#tableBytesMax - size);
    if (size > this.#tableBytesMax) return;
    const slots = this.#slots;
    assert(this.#count < slots, 'HPACK dynamic table ring is full below its byte limit');
    this.#newest = this.#newest + 1 === slots ? 0 : this.#newest + 1;
    this.#names[this.#newest] = name;
    this.#values[this.#newest] = value;
    this.#count++;
    this.#tableBytes += size;
  }

  /** Evicts the oldest entries until the table holds at most `bytes` (possibly < 0: then it empties). */
  #evictTo(bytes: number): void {
    const slots = this.#slots;
    while (this.#tableBytes > bytes && this.#count > 0) {
      let oldest = this.#newest - this.#count + 1;
      if (oldest < 0) oldest += slots;
      this.#tableBytes -= this.#names[oldest]!.length + this.#values[oldest]!.length + entryOverheadBytes;
      this.#names[oldest] = '';
      this.#values[oldest] = '';
      this.#count--;
    }
    assert(this.#tableBytes >= 0 && (this.#count > 0 || this.#tableBytes === 0), 'HPACK table size accounting broke');
  }

  /** RFC 7541 6.3: a new maximum, at most what we announced (else a decoding error). */
  #resize(bytes: number): void {
    if (bytes > this.#tableBytesLimit) {
      throw new HpackError(`dynamic table size update to ${bytes} over our header table size ${this.#tableBytesLimit}`);
    }
    this.#tableBytesMax = bytes;
    this.#evictTo(bytes);
  }

  /** RFC 7541 5.1: an integer with an n-bit prefix, at #pos (which the caller knows is inside the block). */
  #integer(prefixBits: number): number {
    const block = this.#block;
    let pos = this.#pos;
    const prefixMax = (1 << prefixBits) - 1;
    let value = block[pos++]! & prefixMax;
    if (value < prefixMax) {
      this.#pos = pos;
      return value;
    }
    for (let i = 0; i < integerContinuationBytesMax; i++) {
      if (pos >= block.length) throw new HpackError('header block ends inside an integer');
      const b = block[pos++]!;
      value += (b & 0x7f) * 2 ** (7 * i);
      if (b < 0x80) {
        if (value > integerMax) throw new HpackError(`HPACK integer ${value} is too large`);
        this.#pos = pos;
        return value;
      }
    }
    throw new HpackError(`HPACK integer longer than ${integerContinuationBytesMax} continuation bytes`);
  }

  /** RFC 7541 5.2: a string literal at #pos, raw or Huffman-coded. */
  #string(): string {
    const block = this.#block;
    if (this.#pos >= block.length) throw new HpackError('header block ends before a string literal');
    const huffman = block[this.#pos]! >= 0x80;
    const length = this.#integer(7);
    const start = this.#pos;
    const end = start + length;
    if (end > block.length) throw new HpackError('header block ends inside a string literal');
    this.#pos = end;
    if (!huffman) return latin1String(block, start, end);
    const text = huffmanDecode(block, start, end);
    if (text === undefined) throw new HpackError('malformed Huffman-coded string (EOS, or bad padding)');
    return text;
  }
}

// --- Encoding (response headers): no dynamic table, no Huffman, so no state. ---

/** RFC 7541 6.1: an indexed field from the static table (e.g. 8, ":status: 200"). */
export function encodeIndexed(staticIndex: number): Buffer {
  assertStaticIndex(staticIndex);
  return Buffer.from([0x80 | staticIndex]); // every static index fits the 7-bit prefix
}

/** RFC 7541 6.2.2: literal without indexing, the name from the static table (e.g. 31, content-type). */
export function encodeLiteralIndexedName(staticIndex: number, value: string): Buffer {
  assertStaticIndex(staticIndex);
  const out = Buffer.allocUnsafe(integerBytes(staticIndex, 4) + stringBytes(value));
  const at = writeInteger(out, 0, 0x00, 4, staticIndex);
  writeString(out, at, value);
  return out;
}

/** RFC 7541 6.2.2: literal without indexing, with a literal name (lowercase, as HTTP/2 requires). */
export function encodeLiteralNewName(name: string, value: string): Buffer {
  assert(name.length > 0 && name === name.toLowerCase(), `header name must be lowercase and non-empty: ${name}`);
  const out = Buffer.allocUnsafe(1 + stringBytes(name) + stringBytes(value));
  out[0] = 0x00;
  writeString(out, writeString(out, 1, name), value);
  return out;
}

function assertStaticIndex(index: number): void {
  assert(Number.isInteger(index) && index >= 1 && index <= staticTableLength, `bad static table index ${index}`);
}

/** Bytes of `value` as an HPACK integer with an n-bit prefix. */
function integerBytes(value: number, prefixBits: number): number {
  const prefixMax = (1 << prefixBits) - 1;
  if (value < prefixMax) return 1;
  let bytes = 2;
  for (let rest = value - prefixMax; rest >= 0x80; rest = Math.floor(rest / 0x80)) bytes++;
  return bytes;
}

/** Writes `value` with an n-bit prefix after the high bits `pattern`; returns the position after it. */
function writeInteger(out: Buffer, at: number, pattern: number, prefixBits: number, value: number): number {
  const prefixMax = (1 << prefixBits) - 1;
  if (value < prefixMax) {
    out[at++] = pattern | value;
    return at;
  }
  out[at++] = pattern | prefixMax;
  let rest = value - prefixMax;
  while (rest >= 0x80) {
    out[at++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  out[at++] = rest;
  return at;
}

/** A raw (not Huffman-coded) string literal's size; `text` must be latin1 (one byte per char). */
function stringBytes(text: string): number {
  assert(!nonLatin1.test(text), 'HPACK strings we send must be latin1');
  return integerBytes(text.length, 7) + text.length;
}

const nonLatin1 = /[^\u0000-\u00ff]/;

function writeString(out: Buffer, at: number, text: string): number {
  at = writeInteger(out, at, 0x00, 7, text.length);
  return at + out.write(text, at, text.length, 'latin1');
}
