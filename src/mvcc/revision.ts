/**
 * Revisions, as etcd's mvcc: `main` is the store revision of a write request (one per Put, DeleteRange or
 * Txn that changed something); `sub` numbers the changes inside it (0, 1, ...). In the 'key' bucket a
 * revision is the key: 8-byte big-endian main, '_', 8-byte big-endian sub (17 bytes), plus a trailing 't'
 * when the entry is a tombstone (a delete). Unsigned-byte order of these keys is revision order.
 */
import { assert, assertSafeInteger } from '../base/assert.js';

export interface Revision {
  readonly main: number;
  readonly sub: number;
}

export const revisionBytesLength = 17;
export const markedRevisionBytesLength = 18;
const separator = 0x5f; // '_'
const tombstoneMarker = 0x74; // 't'

export function compareRevision(a: Revision, b: Revision): number {
  return a.main !== b.main ? a.main - b.main : a.sub - b.sub;
}

function writeU64(out: Uint8Array, offset: number, n: number): void {
  assertSafeInteger(n, 'revision component');
  const high = Math.floor(n / 0x1_0000_0000);
  const low = n >>> 0;
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  view.setUint32(offset, high);
  view.setUint32(offset + 4, low);
}

function readU64(b: Uint8Array, offset: number): number {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const n = view.getUint32(offset) * 0x1_0000_0000 + view.getUint32(offset + 4);
  assertSafeInteger(n, 'decoded revision component');
  return n;
}

export function revisionToBytes(rev: Revision, tombstone = false): Uint8Array {
  const out = new Uint8Array(tombstone ? markedRevisionBytesLength : revisionBytesLength);
  writeU64(out, 0, rev.main);
  out[8] = separator;
  writeU64(out, 9, rev.sub);
  if (tombstone) out[17] = tombstoneMarker;
  return out;
}

export function bytesToRevision(b: Uint8Array): { rev: Revision; tombstone: boolean } {
  assert(b.length === revisionBytesLength || b.length === markedRevisionBytesLength, `bad revision key length ${b.length}`);
  assert(b[8] === separator, 'bad revision key separator');
  const tombstone = b.length === markedRevisionBytesLength;
  if (tombstone) assert(b[17] === tombstoneMarker, 'bad tombstone marker');
  return { rev: { main: readU64(b, 0), sub: readU64(b, 9) }, tombstone };
}
