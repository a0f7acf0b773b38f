/**
 * The 'lease' bucket, byte-for-byte as etcd stores it: the key is the lease id as 8 big-endian bytes, the
 * value is leasepb.Lease in protobuf wire format (1 ID, 2 TTL, 3 RemainingTTL, all int64 varints, zero fields
 * omitted). Same bytes as etcd keeps a snapshot's lease bucket comparable with etcd's.
 */
import { assert } from '../base/assert.js';

export interface LeaseRecord {
  id: bigint;
  ttlSeconds: number;
  /** 0: unset (the full TTL applies at the next promote). */
  remainingTtlSeconds: number;
}

const u64Mask = (1n << 64n) - 1n;

export function leaseKey(id: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt.asUintN(64, id));
  return out;
}

export function leaseIdOfKey(key: Uint8Array): bigint {
  assert(key.length === 8, `lease key must be 8 bytes, got ${key.length}`);
  return new DataView(key.buffer, key.byteOffset, 8).getBigInt64(0);
}

export function encodeLeaseRecord(r: LeaseRecord): Uint8Array {
  const bytes: number[] = [];
  field(bytes, 1, r.id);
  field(bytes, 2, BigInt(r.ttlSeconds));
  field(bytes, 3, BigInt(r.remainingTtlSeconds));
  return Uint8Array.from(bytes);
}

function field(out: number[], num: number, value: bigint): void {
  if (value === 0n) return;
  out.push(num << 3); // wire type 0: varint
  let v = value & u64Mask; // int64 on the wire: negatives as their two's complement
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
}

export function decodeLeaseRecord(bytes: Uint8Array): LeaseRecord {
  const r: LeaseRecord = { id: 0n, ttlSeconds: 0, remainingTtlSeconds: 0 };
  let pos = 0;
  while (pos < bytes.length) {
    const tag = bytes[pos++]!;
    assert((tag & 7) === 0, `lease record: unexpected wire type in tag ${tag}`);
    let v = 0n;
    let shift = 0n;
    for (;;) {
      assert(pos < bytes.length && shift < 70n, 'lease record: truncated varint');
      const b = bytes[pos++]!;
      v |= BigInt(b & 0x7f) << shift;
      shift += 7n;
      if ((b & 0x80) === 0) break;
    }
    const signed = BigInt.asIntN(64, v);
    if (tag >> 3 === 1) r.id = signed;
    else if (tag >> 3 === 2) r.ttlSeconds = Number(signed);
    else if (tag >> 3 === 3) r.remainingTtlSeconds = Number(signed);
  }
  return r;
}
