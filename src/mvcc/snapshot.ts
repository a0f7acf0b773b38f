/**
 * The snapshot stream: a point-in-time copy of every backend bucket, for Raft snapshots sent to followers.
 * Produced and consumed in chunks, so neither side ever holds the key space in memory. Framed and
 * checksummed so a truncated or corrupted stream is refused before it is used:
 *   "ETCSNAP1" | records | 0xff | crc32c(everything before) as u32 BE
 *   record = bucket index (u8) | key length (u32 BE) | key | value length (u32 BE) | value
 */
import { assert } from '../base/assert.js';
import { buckets, type BatchOp, type Bucket } from './backend.js';
import { Crc32c } from './kv-codec.js';

const magic = new TextEncoder().encode('ETCSNAP1');
const endMarker = 0xff;
/** Records are gathered into chunks of about this size. */
export const snapshotStreamChunkBytes = 256 * 1024;

export class SnapshotFormatError extends Error {
  override name = 'SnapshotFormatError';
}

/** Encodes records into chunks of about snapshotStreamChunkBytes. */
export class SnapshotEncoder {
  readonly #crc = new Crc32c();
  #parts: Uint8Array[] = [];
  #partBytes = 0;

  constructor() {
    this.#push(magic);
  }

  #push(b: Uint8Array): void {
    this.#crc.update(b);
    this.#parts.push(b);
    this.#partBytes += b.length;
  }

  /** Add one entry; returns a chunk when enough bytes have gathered. */
  add(bucket: Bucket, key: Uint8Array, value: Uint8Array): Uint8Array | undefined {
    const head = new Uint8Array(5);
    head[0] = buckets.indexOf(bucket);
    new DataView(head.buffer).setUint32(1, key.length);
    const vlen = new Uint8Array(4);
    new DataView(vlen.buffer).setUint32(0, value.length);
    this.#push(head);
    this.#push(key);
    this.#push(vlen);
    this.#push(value);
    return this.#partBytes >= snapshotStreamChunkBytes ? this.#take() : undefined;
  }

  #take(): Uint8Array {
    const out = new Uint8Array(this.#partBytes);
    let pos = 0;
    for (const p of this.#parts) {
      out.set(p, pos);
      pos += p.length;
    }
    this.#parts = [];
    this.#partBytes = 0;
    return out;
  }

  /** The last chunk: what is left, the end marker and the checksum. */
  finish(): Uint8Array {
    this.#push(new Uint8Array([endMarker]));
    const crc = new Uint8Array(4);
    new DataView(crc.buffer).setUint32(0, this.#crc.sum());
    this.#parts.push(crc);
    this.#partBytes += 4;
    return this.#take();
  }
}

/**
 * Decodes a snapshot stream chunk by chunk. `push` returns the complete records so far as put ops (bytes
 * owned by the ops); `end` checks the end marker and the checksum. Callers must not act on the ops as final
 * before `end` succeeds (write them where a failed import can be discarded).
 */
export class SnapshotDecoder {
  readonly #crc = new Crc32c();
  #pending = new Uint8Array(0);
  #sawMagic = false;
  #ended = false;

  #fail(why: string): never {
    throw new SnapshotFormatError(`invalid snapshot: ${why}`);
  }

  push(chunk: Uint8Array): BatchOp[] {
    assert(!this.#ended, 'snapshot decoder used after its end');
    const data = this.#pending.length === 0 ? chunk : concat(this.#pending, chunk);
    const ops: BatchOp[] = [];
    let pos = 0;
    if (!this.#sawMagic) {
      if (data.length < magic.length) return this.#keep(data, 0, ops);
      for (let i = 0; i < magic.length; i++) if (data[i] !== magic[i]) this.#fail('bad magic');
      this.#crc.update(data.subarray(0, magic.length));
      this.#sawMagic = true;
      pos = magic.length;
    }
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    // A record is only consumed whole; the tail (a partial record, or the end marker and checksum) waits.
    while (pos + 5 <= data.length && data[pos] !== endMarker) {
      const bucket = buckets[data[pos]!] ?? this.#fail(`unknown bucket ${data[pos]}`);
      const klen = view.getUint32(pos + 1);
      if (pos + 5 + klen + 4 > data.length) break;
      const vlen = view.getUint32(pos + 5 + klen);
      const end = pos + 9 + klen + vlen;
      if (end > data.length) break;
      this.#crc.update(data.subarray(pos, end));
      ops.push({ type: 'put', bucket, key: data.slice(pos + 5, pos + 5 + klen), value: data.slice(pos + 9 + klen, end) });
      pos = end;
    }
    return this.#keep(data, pos, ops);
  }

  #keep(data: Uint8Array, pos: number, ops: BatchOp[]): BatchOp[] {
    this.#pending = data.slice(pos);
    return ops;
  }

  end(): void {
    this.#ended = true;
    const rest = this.#pending;
    if (!this.#sawMagic) this.#fail('too short');
    if (rest.length === 0 || rest[0] !== endMarker) this.#fail(rest.length === 0 ? 'missing end marker' : 'truncated record');
    if (rest.length !== 5) this.#fail(rest.length < 5 ? 'truncated checksum' : 'data after the checksum');
    this.#crc.update(rest.subarray(0, 1));
    if (this.#crc.sum() !== new DataView(rest.buffer, rest.byteOffset, 5).getUint32(1)) this.#fail('checksum mismatch');
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
