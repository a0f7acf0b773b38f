/**
 * The state stream: a point-in-time copy of every backend bucket, the data of a Raft snapshot sent to a follower
 * (a member's own Raft snapshots carry none: storage/snapshot-data.ts). Not an etcd backup: those are bbolt files (backup/).
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
export const stateStreamChunkBytes = 256 * 1024;

export class StateStreamFormatError extends Error {
  override name = 'StateStreamFormatError';
}

/**
 * Encodes records into chunks of about stateStreamChunkBytes. Records are written straight into the chunk
 * being filled and the checksum runs once per chunk, so an entry costs no allocation of its own.
 */
export class StateStreamEncoder {
  readonly #crc = new Crc32c();
  #chunk = new Uint8Array(stateStreamChunkBytes);
  #view = new DataView(this.#chunk.buffer);
  #pos = 0;
  #finished = false;

  constructor() {
    this.#chunk.set(magic);
    this.#pos = magic.length;
  }

  /** Make room for `bytes` more; returns the filled chunk when a new one had to start. */
  #reserve(bytes: number): Uint8Array | undefined {
    if (this.#pos + bytes <= this.#chunk.length) return undefined;
    const out = this.#pos > 0 ? this.#take() : undefined;
    // A record larger than a chunk (a value up to the request limit) gets a chunk of its own.
    this.#chunk = new Uint8Array(Math.max(stateStreamChunkBytes, bytes));
    this.#view = new DataView(this.#chunk.buffer);
    return out;
  }

  #take(): Uint8Array {
    const out = this.#chunk.subarray(0, this.#pos);
    this.#crc.update(out);
    this.#pos = 0;
    return out;
  }

  /** Add one entry; returns a chunk when enough bytes have gathered. */
  add(bucket: Bucket, key: Uint8Array, value: Uint8Array): Uint8Array | undefined {
    assert(!this.#finished, 'snapshot encoder used after finish');
    const out = this.#reserve(9 + key.length + value.length);
    const pos = this.#pos;
    this.#chunk[pos] = buckets.indexOf(bucket);
    this.#view.setUint32(pos + 1, key.length);
    this.#chunk.set(key, pos + 5);
    this.#view.setUint32(pos + 5 + key.length, value.length);
    this.#chunk.set(value, pos + 9 + key.length);
    this.#pos = pos + 9 + key.length + value.length;
    return out;
  }

  /** The last chunk(s): what is left, the end marker and the checksum. */
  finish(): Uint8Array[] {
    assert(!this.#finished, 'snapshot encoder finished twice');
    this.#finished = true;
    const out: Uint8Array[] = [];
    const full = this.#reserve(5);
    if (full !== undefined) out.push(full);
    this.#chunk[this.#pos++] = endMarker;
    const last = this.#take();
    this.#view.setUint32(last.length, this.#crc.sum());
    out.push(this.#chunk.subarray(0, last.length + 4));
    return out;
  }
}

/**
 * Decodes a state stream chunk by chunk. `push` returns the complete records so far as put ops whose
 * bytes are views into the pushed chunk (or into the decoder's copy of a record cut by a chunk boundary): the
 * caller hands over the chunk and must not change it, and should let go of the ops once written (a view pins
 * its whole chunk). A copy per key and per value was the import's largest own cost. `end` checks the end marker and the checksum. Callers must not act on the ops as final
 * before `end` succeeds (write them where a failed import can be discarded). `check` walks the same framing
 * and checksum without producing ops, for a receiver that verifies a stream while it is written to disk.
 */
export class StateStreamDecoder {
  readonly #crc = new Crc32c();
  #pending = new Uint8Array(0);
  #sawMagic = false;
  #ended = false;

  #fail(why: string): never {
    throw new StateStreamFormatError(`invalid snapshot: ${why}`);
  }

  push(chunk: Uint8Array): BatchOp[] {
    const ops: BatchOp[] = [];
    this.#walk(chunk, ops);
    return ops;
  }

  check(chunk: Uint8Array): void {
    this.#walk(chunk, undefined);
  }

  #walk(chunk: Uint8Array, ops: BatchOp[] | undefined): void {
    assert(!this.#ended, 'snapshot decoder used after its end');
    let data = chunk;
    const pending = this.#pending;
    if (pending.length > 0) {
      // A record cut by the previous chunk's end is finished on a copy of its own bytes only; the rest of the
      // chunk is then walked in place (copying every chunk behind its carried-over tail cost a pass over the
      // whole snapshot). Only when that copy does not finish it (a cut header) is the chunk copied whole.
      const take = Math.min(chunk.length, Math.max(stitchBytesMin, cutRecordRest(pending)));
      const stitch = concat(pending, chunk.subarray(0, take));
      const pos = this.#records(stitch, ops);
      if (pos >= pending.length) {
        this.#crc.update(stitch.subarray(0, pos));
        this.#pending = new Uint8Array(0);
        data = chunk.subarray(pos - pending.length);
      } else {
        data = take === chunk.length ? stitch : concat(pending, chunk);
      }
    }
    this.#keep(data, this.#records(data, ops));
  }

  /** Walks the whole records at the start of data (and the magic, first); returns the bytes they span. */
  #records(data: Uint8Array, ops: BatchOp[] | undefined): number {
    let pos = 0;
    if (!this.#sawMagic) {
      if (data.length < magic.length) return 0;
      for (let i = 0; i < magic.length; i++) if (data[i] !== magic[i]) this.#fail('bad magic');
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
      if (ops !== undefined) ops.push({ type: 'put', bucket, key: data.subarray(pos + 5, pos + 5 + klen), value: data.subarray(pos + 9 + klen, end) });
      pos = end;
    }
    return pos;
  }

  /** Checksums data[0, pos) (consumed) and keeps the rest for the next chunk. */
  #keep(data: Uint8Array, pos: number): void {
    this.#crc.update(data.subarray(0, pos));
    this.#pending = pos === data.length ? new Uint8Array(0) : data.slice(pos);
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

/** The least of a chunk copied to finish a cut record: enough for any header, and small beside a chunk. */
const stitchBytesMin = 64 * 1024;

/** Bytes still missing from the record cut at the start of `pending`, when its header says (else 0). */
function cutRecordRest(pending: Uint8Array): number {
  if (pending.length < 5 || pending[0] === endMarker) return 0;
  const view = new DataView(pending.buffer, pending.byteOffset, pending.byteLength);
  const klen = view.getUint32(1);
  if (pending.length < 9 + klen) return 0;
  return 9 + klen + view.getUint32(5 + klen) - pending.length;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
