/**
 * Log records: framing and payloads.
 *
 * Frame (16-byte header, little-endian, every record 8-byte aligned within its segment):
 *   0  u32 payload length
 *   4  u8  type (RecordType)
 *   5  u8  flags (bit 0: last record of its write batch)
 *   6  u16 reserved, zero
 *   8  u32 batch sequence (one per write+sync; recovery uses it to tell a torn last batch from corruption)
 *   12 u32 CRC-32C of the payload, continued over header bytes 0..12, seeded with the segment's salt (a
 *      function of its sequence number), so records left over from a recycled file's previous life never
 *      validate in its new one
 *   16 payload (msgpack), then zero padding to a multiple of 8
 * An all-zero header is "end of data" (segments are preallocated with zeros).
 *
 * Payloads are msgpack arrays, not objects (no field names on disk, and no msgpackr record extension):
 *   Entries      [firstIndex, term, type, data, term, type, data, ...]  (contiguous indexes)
 *   HardState    [term, vote (decimal string: a uint64), commit]
 *   SnapshotMeta [index, term, voters[] (decimal strings), learners[]]
 */
import { Packr } from 'msgpackr';
import { assert, assertSafeInteger, walRecordBytesMax, walRecordChunkBytes } from '../base/index.js';
import type { Entry, EntryType, HardState, SnapshotMeta } from '../raft/types.js';
import { crc32c } from './crc32c.js';

export const RecordType = { Entries: 1, HardState: 2, SnapshotMeta: 3 } as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

export const recordHeaderBytes = 16;
export const flagLastInBatch = 1;

/** Upper bound of the encoded size of a record whose payload is at most `payloadBytes`. */
export function recordBytesBound(payloadBytes: number): number {
  return recordHeaderBytes + payloadBytes + 7;
}

/** Upper bound of the msgpack size of one entry beyond its data (term f64, type, bin header). */
export const entryOverheadBytesBound = 9 + 1 + 5;

export function pad8(n: number): number {
  return (n + 7) & ~7;
}

// One reusable encoder: structured clone and records off, so Uint8Array data is written as plain msgpack bin.
const packr = new Packr({ useRecords: false, structuredClone: false });
// Decoded data is copied out of the segment buffer so a recovered log does not pin whole segments in memory.
const unpackr = new Packr({ useRecords: false, structuredClone: false, copyBuffers: true });

/**
 * Encodes one write batch into a reusable buffer. Usage: begin(seq), any number of entries()/hardState()/
 * snapshotMeta(), then finish() returns the bytes to write (valid until the next begin()).
 */
export class BatchEncoder {
  #buf = Buffer.alloc(64 * 1024);
  #length = 0;
  #seq = 0;
  #salt = 0;
  #records = 0;
  #lastHeaderAt = -1;
  #lastPayloadCrc = 0;

  get records(): number {
    return this.#records;
  }

  begin(seq: number, salt: number): void {
    this.#length = 0;
    this.#seq = seq >>> 0;
    this.#salt = salt;
    this.#records = 0;
    this.#lastHeaderAt = -1;
  }

  /** Entries of one save, split into records of about walRecordChunkBytes. */
  entries(entries: readonly Entry[]): void {
    let start = 0;
    while (start < entries.length) {
      let end = start;
      let bytes = 0;
      do {
        bytes += entries[end]!.data.length + entryOverheadBytesBound;
        end++;
      } while (end < entries.length && bytes + entries[end]!.data.length <= walRecordChunkBytes);
      const payload: unknown[] = [entries[start]!.index];
      for (let i = start; i < end; i++) {
        const e = entries[i]!;
        payload.push(e.term, e.type, e.data);
      }
      this.#append(RecordType.Entries, packr.pack(payload));
      start = end;
    }
  }

  hardState(hs: HardState): void {
    this.#append(RecordType.HardState, packr.pack([hs.term, hs.vote.toString(), hs.commit]));
  }

  snapshotMeta(meta: SnapshotMeta): void {
    this.#append(RecordType.SnapshotMeta, packr.pack(snapshotMetaArray(meta)));
  }

  /** Marks the last record as the end of the batch and returns the batch's bytes. */
  finish(): Uint8Array {
    assert(this.#lastHeaderAt >= 0, 'empty batch');
    const h = this.#lastHeaderAt;
    this.#buf[h + 5] = flagLastInBatch;
    this.#buf.writeUInt32LE(crc32c(this.#buf, this.#lastPayloadCrc, h, h + 12), h + 12);
    return this.#buf.subarray(0, this.#length);
  }

  #append(type: RecordType, payload: Uint8Array): void {
    assert(payload.length <= walRecordBytesMax, `wal record of ${payload.length} bytes exceeds the limit`);
    const total = recordHeaderBytes + pad8(payload.length);
    this.#reserve(total);
    const buf = this.#buf;
    const h = this.#length;
    buf.writeUInt32LE(payload.length, h);
    buf[h + 4] = type;
    buf[h + 5] = 0;
    buf.writeUInt16LE(0, h + 6);
    buf.writeUInt32LE(this.#seq, h + 8);
    buf.set(payload, h + recordHeaderBytes);
    buf.fill(0, h + recordHeaderBytes + payload.length, h + total);
    const payloadCrc = crc32c(payload, this.#salt);
    buf.writeUInt32LE(crc32c(buf, payloadCrc, h, h + 12), h + 12);
    this.#lastHeaderAt = h;
    this.#lastPayloadCrc = payloadCrc;
    this.#length += total;
    this.#records++;
  }

  #reserve(bytes: number): void {
    if (this.#length + bytes <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#length + bytes) size *= 2;
    const next = Buffer.alloc(size);
    this.#buf.copy(next, 0, 0, this.#length);
    this.#buf = next;
  }
}

export type FrameRead =
  | { kind: 'record'; type: RecordType; lastInBatch: boolean; batchSeq: number; payload: Uint8Array; next: number }
  | { kind: 'zero' }
  | BadFrame;

/**
 * A frame that does not validate, with what recovery needs to tell a torn write from damage (segment.ts):
 * - `cut`: the file ends inside it (its header, or the payload its length declares);
 * - `header`: the header is not one of ours (type, reserved bits, or a length over the limit);
 * - `crc`: the header is well formed and the declared bytes are all in the file, but the CRC mismatches.
 * `start`: its offset; `frameEnd`: the end of the bytes the frame claims that are in the file (the header alone when its length
 * is not believable), the region in which recovery looks for sectors that were never written.
 */
export interface BadFrame {
  kind: 'bad';
  reason: string;
  shape: 'cut' | 'header' | 'crc';
  start: number;
  frameEnd: number;
}

/**
 * Reads the frame at `offset` of `buf[0, end)` without allocating: a length past `end` or beyond
 * walRecordBytesMax is reported as bad before anything is read or copied (W4). `salt`: the segment's.
 */
export function readFrame(buf: Uint8Array, offset: number, end: number, salt: number): FrameRead {
  if (offset + recordHeaderBytes > end) {
    if (isZero(buf, offset, end)) return { kind: 'zero' };
    return { kind: 'bad', reason: 'record header cut by end of file', shape: 'cut', start: offset, frameEnd: end };
  }
  const length = u32(buf, offset);
  const type = buf[offset + 4]!;
  const flags = buf[offset + 5]!;
  if (length === 0 && type === 0 && isZero(buf, offset, offset + recordHeaderBytes)) return { kind: 'zero' };
  // The bytes a well-formed length claims, for the torn-write test of a header that is not ours.
  const claimed = length <= walRecordBytesMax && offset + recordHeaderBytes + length <= end ? offset + recordHeaderBytes + length : offset + recordHeaderBytes;
  const badHeader = (reason: string): BadFrame => ({ kind: 'bad', reason, shape: 'header', start: offset, frameEnd: claimed });
  if (type < RecordType.Entries || type > RecordType.SnapshotMeta) return badHeader(`unknown record type ${type}`);
  if ((flags & ~flagLastInBatch) !== 0 || buf[offset + 6] !== 0 || buf[offset + 7] !== 0) return badHeader('reserved header bits set');
  if (length > walRecordBytesMax) return badHeader(`record length ${length} exceeds the limit ${walRecordBytesMax}`);
  const next = offset + recordHeaderBytes + pad8(length);
  if (next > end) return { kind: 'bad', reason: `record length ${length} runs past the end of the file`, shape: 'cut', start: offset, frameEnd: end };
  const payload = buf.subarray(offset + recordHeaderBytes, offset + recordHeaderBytes + length);
  const crc = crc32c(buf, crc32c(payload, salt), offset, offset + 12);
  if (crc !== u32(buf, offset + 12)) return { kind: 'bad', reason: 'CRC mismatch', shape: 'crc', start: offset, frameEnd: offset + recordHeaderBytes + length };
  return { kind: 'record', type: type as RecordType, lastInBatch: flags === flagLastInBatch, batchSeq: u32(buf, offset + 8), payload, next };
}

function u32(buf: Uint8Array, at: number): number {
  return (buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16) | (buf[at + 3]! << 24)) >>> 0;
}

export function isZero(buf: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buf[i] !== 0) return false;
  return true;
}

function unpackArray(payload: Uint8Array, what: string): unknown[] {
  const value: unknown = unpackr.unpack(payload);
  if (!Array.isArray(value)) throw new Error(`${what} payload is not an array`);
  return value;
}

function safeInt(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new Error(`bad ${what}: ${String(v)}`);
  return v;
}

function nodeId(v: unknown): bigint {
  if (typeof v !== 'string' || !/^\d{1,20}$/.test(v)) throw new Error(`bad node id: ${String(v)}`);
  return BigInt(v);
}

export function decodeEntries(payload: Uint8Array): Entry[] {
  const a = unpackArray(payload, 'entries');
  if (a.length < 4 || (a.length - 1) % 3 !== 0) throw new Error('entries payload has the wrong shape');
  const first = safeInt(a[0], 'first index');
  const entries: Entry[] = [];
  for (let i = 1; i < a.length; i += 3) {
    const type = a[i + 1];
    const data = a[i + 2];
    if (type !== 0 && type !== 1) throw new Error(`bad entry type ${String(type)}`);
    if (!(data instanceof Uint8Array)) throw new Error('entry data is not bytes');
    entries.push({ term: safeInt(a[i], 'term'), index: first + (i - 1) / 3, type: type as EntryType, data });
  }
  return entries;
}

export function decodeHardState(payload: Uint8Array): HardState {
  const a = unpackArray(payload, 'hard state');
  if (a.length !== 3) throw new Error('hard state payload has the wrong shape');
  return { term: safeInt(a[0], 'term'), vote: nodeId(a[1]), commit: safeInt(a[2], 'commit') };
}

export function decodeSnapshotMeta(payload: Uint8Array): SnapshotMeta {
  return snapshotMetaFrom(unpackArray(payload, 'snapshot meta'));
}

/**
 * [index, term, voters[], learners[]], then witnesses[] only when there are some (so a configuration without
 * witnesses is written exactly as before them, and older records read as having none). Shared with snapshot
 * files.
 */
export function snapshotMetaArray(meta: SnapshotMeta): unknown[] {
  const { voters, learners, witnesses } = meta.confState;
  const a: unknown[] = [meta.index, meta.term, voters.map(String), learners.map(String)];
  if (witnesses !== undefined && witnesses.length > 0) a.push(witnesses.map(String));
  return a;
}

/** snapshotMetaArray's layout as decoded from msgpack. */
export function snapshotMetaFrom(a: unknown[]): SnapshotMeta {
  const [index, term, voters, learners, witnesses] = a;
  if (a.length < 4 || !Array.isArray(voters) || !Array.isArray(learners)) throw new Error('snapshot meta has the wrong shape');
  if (witnesses !== undefined && !Array.isArray(witnesses)) throw new Error('snapshot meta has the wrong shape');
  const confState: SnapshotMeta['confState'] = { voters: voters.map(nodeId), learners: learners.map(nodeId) };
  if (witnesses !== undefined && witnesses.length > 0) confState.witnesses = witnesses.map(nodeId);
  return { index: safeInt(index, 'snapshot index'), term: safeInt(term, 'snapshot term'), confState };
}

/** Validates what the WAL is asked to write (programmer errors are assertions). */
export function assertEntries(entries: readonly Entry[]): void {
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    assertSafeInteger(e.index, 'entry index');
    assertSafeInteger(e.term, 'entry term');
    assert(e.index > 0, 'entry index 0');
    if (i > 0) {
      assert(e.index === entries[i - 1]!.index + 1, 'entries must be contiguous');
      assert(e.term >= entries[i - 1]!.term, 'entry terms must not decrease');
    }
  }
}
