/** The store's own entries in the backend's meta bucket, and their encoding (big-endian u64, as etcd). */
import { assert, assertSafeInteger } from '../base/assert.js';

export const consistentIndexKey = new TextEncoder().encode('consistent_index');
/** etcd 3.5 keeps the term of the consistent index beside it; a snapshot sent to a follower needs both. */
export const termKey = new TextEncoder().encode('term');

export function u64Bytes(n: number): Uint8Array {
  const out = new Uint8Array(8);
  const view = new DataView(out.buffer);
  view.setUint32(0, Math.floor(n / 0x1_0000_0000));
  view.setUint32(4, n >>> 0);
  return out;
}

export function readU64(b: Uint8Array): number {
  assert(b.length === 8, 'meta u64 length');
  const view = new DataView(b.buffer, b.byteOffset, 8);
  const n = view.getUint32(0) * 0x1_0000_0000 + view.getUint32(4);
  assertSafeInteger(n, 'meta u64');
  return n;
}

export function latin1(b: Uint8Array): string {
  let out = '';
  for (const byte of b) out += String.fromCharCode(byte);
  return out;
}
