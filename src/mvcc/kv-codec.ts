/**
 * The 'key' bucket's value encoding: mvccpb.KeyValue in protobuf wire format, byte-for-byte what etcd
 * stores (proto3: zero fields omitted, fields in number order). Storing the same bytes as etcd makes our
 * HashKV equal to etcd's for the same history, which the differential test checks.
 * Fields: 1 key (bytes), 2 create_revision, 3 mod_revision, 4 version (int64), 5 value (bytes), 6 lease (int64).
 */
import { assert } from '../base/assert.js';
import { crc32c } from '../base/crc32c.js';
import type { KeyValue } from './types.js';

const u64Mask = (1n << 64n) - 1n;

function varintLength(n: bigint): number {
  let len = 1;
  while (n >= 0x80n) {
    n >>= 7n;
    len++;
  }
  return len;
}

function numberVarintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

class Writer {
  readonly out: Uint8Array;
  pos = 0;
  constructor(size: number) {
    this.out = new Uint8Array(size);
  }
  varint(n: number): void {
    while (n >= 0x80) {
      this.out[this.pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    this.out[this.pos++] = n;
  }
  bigVarint(n: bigint): void {
    while (n >= 0x80n) {
      this.out[this.pos++] = Number(n & 0x7fn) | 0x80;
      n >>= 7n;
    }
    this.out[this.pos++] = Number(n);
  }
  bytes(b: Uint8Array): void {
    this.varint(b.length);
    this.out.set(b, this.pos);
    this.pos += b.length;
  }
}

export function encodeKeyValue(kv: KeyValue): Uint8Array {
  const lease = BigInt.asUintN(64, kv.lease) & u64Mask;
  let size = 0;
  if (kv.key.length > 0) size += 1 + numberVarintLength(kv.key.length) + kv.key.length;
  if (kv.createRevision !== 0) size += 1 + numberVarintLength(kv.createRevision);
  if (kv.modRevision !== 0) size += 1 + numberVarintLength(kv.modRevision);
  if (kv.version !== 0) size += 1 + numberVarintLength(kv.version);
  if (kv.value.length > 0) size += 1 + numberVarintLength(kv.value.length) + kv.value.length;
  if (lease !== 0n) size += 1 + varintLength(lease);
  const w = new Writer(size);
  if (kv.key.length > 0) (w.varint(0x0a), w.bytes(kv.key));
  if (kv.createRevision !== 0) (w.varint(0x10), w.varint(kv.createRevision));
  if (kv.modRevision !== 0) (w.varint(0x18), w.varint(kv.modRevision));
  if (kv.version !== 0) (w.varint(0x20), w.varint(kv.version));
  if (kv.value.length > 0) (w.varint(0x2a), w.bytes(kv.value));
  if (lease !== 0n) (w.varint(0x30), w.bigVarint(lease));
  assert(w.pos === size, 'KeyValue encoding size mismatch');
  return w.out;
}

export function decodeKeyValue(b: Uint8Array): KeyValue {
  return decode(b, true);
}

/**
 * The KeyValue without its value (left empty) and with its key a view into `b` (copy it to keep it): what
 * loading the key index needs. A snapshot import or a backend scan decodes every stored revision, and
 * copying each value only to drop it was a tenth of an import's CPU.
 */
export function decodeKeyValueMeta(b: Uint8Array): KeyValue {
  return decode(b, false);
}

function decode(b: Uint8Array, whole: boolean): KeyValue {
  const kv: KeyValue = { key: new Uint8Array(0), createRevision: 0, modRevision: 0, version: 0, value: new Uint8Array(0), lease: 0n };
  let pos = 0;
  // Revisions, versions, tags and lengths fit a double exactly (< 2^53); only the lease needs 64 bits.
  // Decoding every stored revision at start made BigInt arithmetic a visible cost.
  const readNumber = (): number => {
    let result = 0;
    let scale = 1;
    for (;;) {
      assert(pos < b.length && scale < 2 ** 56, 'truncated varint in KeyValue');
      const byte = b[pos++]!;
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        assert(Number.isSafeInteger(result), 'KeyValue varint beyond 2^53');
        return result;
      }
      scale *= 128;
    }
  };
  const readBig = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      assert(pos < b.length && shift < 70n, 'truncated varint in KeyValue');
      const byte = b[pos++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return result;
      shift += 7n;
    }
  };
  const readBytes = (): Uint8Array => {
    const len = readNumber();
    assert(pos + len <= b.length, 'truncated bytes in KeyValue');
    const out = b.slice(pos, pos + len);
    pos += len;
    return out;
  };
  const readView = (): Uint8Array => {
    const len = readNumber();
    assert(pos + len <= b.length, 'truncated bytes in KeyValue');
    const out = b.subarray(pos, pos + len);
    pos += len;
    return out;
  };
  // The metadata decode steps over the value without a view of it (one object fewer per key loaded).
  const skipBytes = (): void => {
    const len = readNumber();
    assert(pos + len <= b.length, 'truncated bytes in KeyValue');
    pos += len;
  };
  while (pos < b.length) {
    const tag = readNumber();
    switch (tag) {
      case 0x0a: kv.key = whole ? readBytes() : readView(); break;
      case 0x10: kv.createRevision = readNumber(); break;
      case 0x18: kv.modRevision = readNumber(); break;
      case 0x20: kv.version = readNumber(); break;
      case 0x2a: if (whole) kv.value = readBytes(); else skipBytes(); break;
      case 0x30: kv.lease = BigInt.asIntN(64, readBig()); break;
      default: assert(false, `unexpected KeyValue field tag ${tag}`);
    }
  }
  return kv;
}

/**
 * CRC-32C (Castagnoli), incremental like Go's hash/crc32: feed chunks with update(), read with sum(). The
 * slicing-by-8 loop of base/crc32c (a byte-at-a-time loop made every snapshot import and HashKV check cost
 * seconds per 100 MB).
 */
export class Crc32c {
  /** The checksum of the bytes so far (crc32c continues from a finished value). */
  #sum = 0;
  update(b: Uint8Array): this {
    this.#sum = crc32c(b, this.#sum);
    return this;
  }
  sum(): number {
    return this.#sum;
  }
}
