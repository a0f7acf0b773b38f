/**
 * The snapshot format: a point-in-time copy of every backend bucket, for Raft snapshots and
 * Maintenance.Snapshot. Framed and checksummed so a truncated or corrupted file is refused:
 *   "ETCSNAP1" | records | 0xff | crc32c(everything before) as u32 BE
 *   record = bucket index (u8) | key length (u32 BE) | key | value length (u32 BE) | value
 */
import { assert } from '../base/assert.js';
import { buckets, type BatchOp, type Bucket } from './backend.js';
import { Crc32c } from './kv-codec.js';

const magic = new TextEncoder().encode('ETCSNAP1');
const endMarker = 0xff;

export class SnapshotWriter {
  #parts: Uint8Array[] = [magic];
  #size = magic.length;

  add(bucket: Bucket, key: Uint8Array, value: Uint8Array): void {
    const head = new Uint8Array(5);
    head[0] = buckets.indexOf(bucket);
    new DataView(head.buffer).setUint32(1, key.length);
    const vlen = new Uint8Array(4);
    new DataView(vlen.buffer).setUint32(0, value.length);
    this.#parts.push(head, key, vlen, value);
    this.#size += 9 + key.length + value.length;
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.#size + 5);
    let pos = 0;
    for (const p of this.#parts) {
      out.set(p, pos);
      pos += p.length;
    }
    out[pos++] = endMarker;
    const crc = new Crc32c().update(out.subarray(0, pos)).sum();
    new DataView(out.buffer).setUint32(pos, crc);
    return out;
  }
}

export class SnapshotFormatError extends Error {
  override name = 'SnapshotFormatError';
}

/** Parse a snapshot into put ops; throws SnapshotFormatError on any damage. */
export function parseSnapshot(data: Uint8Array): BatchOp[] {
  const fail = (why: string): never => {
    throw new SnapshotFormatError(`invalid snapshot: ${why}`);
  };
  if (data.length < magic.length + 5) fail('too short');
  for (let i = 0; i < magic.length; i++) if (data[i] !== magic[i]) fail('bad magic');
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const crcAt = data.length - 4;
  if (data[crcAt - 1] !== endMarker) fail('missing end marker');
  if (new Crc32c().update(data.subarray(0, crcAt)).sum() !== view.getUint32(crcAt)) fail('checksum mismatch');
  const ops: BatchOp[] = [];
  let pos = magic.length;
  while (pos < crcAt - 1) {
    if (pos + 5 > crcAt - 1) fail('truncated record');
    const bucket = buckets[data[pos]!] ?? fail(`unknown bucket ${data[pos]}`);
    const klen = view.getUint32(pos + 1);
    pos += 5;
    if (pos + klen + 4 > crcAt - 1) fail('truncated key');
    const key = data.slice(pos, pos + klen);
    pos += klen;
    const vlen = view.getUint32(pos);
    pos += 4;
    if (pos + vlen > crcAt - 1) fail('truncated value');
    const value = data.slice(pos, pos + vlen);
    pos += vlen;
    ops.push({ type: 'put', bucket, key, value });
  }
  assert(pos === crcAt - 1, 'snapshot parse position');
  return ops;
}
