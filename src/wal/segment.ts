/**
 * Segment files: naming, the header, and the recovery scan of one segment.
 *
 * Name: `<seq:16 hex>-<firstIndex:16 hex>.wal` (etcd's style). Sequence numbers are contiguous; a gap is
 * corruption. A segment is created under `<seq>.wal.tmp`, filled, fsynced and only then renamed and the
 * directory fsynced, so a segment name never exists without its header (W10, etcd #6368).
 *
 * Header (64 bytes): magic "ETCETWAL", u32 format version, u32 header size, f64 seq, u32 flags (bit 0:
 * recycled), u32 zero, u32 CRC-32C of bytes 0..32 at offset 32, zeros. Records follow at offset 64.
 *
 * Recycled segments (segment-log.ts) are released segments reused in place of zero-filled new ones: their
 * bytes after the records of this life are the previous life's records, which fail the CRC because every
 * record's CRC is seeded with the segment's salt (derived from its sequence number, never reused).
 *
 * Every segment opened by rotation begins with the current hard state and snapshot metadata, so the
 * segments before it can be deleted without losing state (etcd does the same).
 */
import { assert } from '../base/index.js';
import { crc32c } from './crc32c.js';
import { WalCorruptError } from './errors.js';
import { isZero, readFrame, type BadFrame, type RecordType } from './record.js';

export const segmentHeaderBytes = 64;
export const segmentFormatVersion = 1;
const magic = Buffer.from('ETCETWAL', 'latin1');

export interface SegmentName {
  seq: number;
  firstIndex: number;
}

const hex16 = (n: number): string => n.toString(16).padStart(16, '0');

export function segmentFileName(seq: number, firstIndex: number): string {
  return `${hex16(seq)}-${hex16(firstIndex)}.wal`;
}

export function segmentTempName(seq: number): string {
  return `${hex16(seq)}.wal.tmp`;
}

export function segmentSpareName(seq: number): string {
  return `${hex16(seq)}.wal.spare`;
}

export function parseSegmentName(name: string): SegmentName | undefined {
  const m = /^([0-9a-f]{16})-([0-9a-f]{16})\.wal$/.exec(name);
  if (!m) return undefined;
  return { seq: Number.parseInt(m[1]!, 16), firstIndex: Number.parseInt(m[2]!, 16) };
}

export function encodeSegmentHeader(seq: number, recycled: boolean): Buffer {
  const h = Buffer.alloc(segmentHeaderBytes);
  magic.copy(h, 0);
  h.writeUInt32LE(segmentFormatVersion, 8);
  h.writeUInt32LE(segmentHeaderBytes, 12);
  h.writeDoubleLE(seq, 16);
  h.writeUInt32LE(recycled ? 1 : 0, 24);
  h.writeUInt32LE(crc32c(h, 0, 0, 32), 32);
  return h;
}

/** The CRC seed of a segment's records. */
export function segmentSalt(seq: number): number {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(seq, 0);
  return crc32c(b);
}

/** Validates the header; returns whether the segment is a recycled file. */
export function checkSegmentHeader(buf: Uint8Array, file: string, seq: number): boolean {
  if (buf.length < segmentHeaderBytes) throw new WalCorruptError(file, 0, 'segment shorter than its header');
  const h = Buffer.from(buf.buffer, buf.byteOffset, segmentHeaderBytes);
  if (!h.subarray(0, 8).equals(magic)) throw new WalCorruptError(file, 0, 'not a wal segment (bad magic)');
  const version = h.readUInt32LE(8);
  if (version !== segmentFormatVersion) throw new WalCorruptError(file, 8, `unsupported wal format version ${version}`);
  if (h.readUInt32LE(32) !== crc32c(h, 0, 0, 32)) throw new WalCorruptError(file, 32, 'segment header CRC mismatch');
  if (h.readDoubleLE(16) !== seq) throw new WalCorruptError(file, 16, 'segment sequence does not match its name');
  return (h.readUInt32LE(24) & 1) === 1;
}

export interface ScannedRecord {
  type: RecordType;
  offset: number;
  payload: Uint8Array;
}

export interface ScannedSegment {
  file: string;
  records: ScannedRecord[];
  /** Offset just past the last valid record: where appending resumes. */
  end: number;
  /** Batch sequence of the last valid record (undefined when there is none). */
  lastBatchSeq: number | undefined;
  /**
   * Set when a torn last batch left bytes of this life after `end`: [end, clearTo) must be zeroed before
   * appending, so no fragment of it can ever be read as a record.
   */
  tornAt?: { offset: number; reason: string; clearTo: number };
}

export interface ScanOptions {
  seq: number;
  recycled: boolean;
  isLast: boolean;
  /** The batch sequence that ended the previous segment (rotation happens between batches). */
  prevBatchSeq: number | undefined;
}

/**
 * Scans one segment. A frame that does not validate is either a **torn write** (a write that never finished,
 * so never acknowledged: dropped, W2/W3) or **damage** to bytes that were written whole (refused, W5). They
 * are told apart by structure, as etcd's decoder does (`isTornEntry`; otherwise `walpb: crc mismatch`):
 *
 * - A disk writes whole sectors (512 bytes, aligned in the file), in any order, and a power cut stops it
 *   between two. Where a sector of our write did not land, a zero-filled segment still reads zeros: the
 *   preallocation, or the zeros a file extension reads as. So a torn record shows one of two marks: **the
 *   file ends inside it** (a write that extended the file was cut), or **a sector inside it is all zeros**
 *   (the part of the record in that sector never reached the disk, even when a later sector did: sectors are
 *   written out of order). An all-zero header followed by non-zero bytes (junk after the last record) is the
 *   second mark on the header's sector.
 * - A frame with neither mark (its header well formed, its declared length inside the file, every sector
 *   of it holding data) was written completely; a CRC mismatch there means the bytes changed after the
 *   write (bit rot, a bad sector, a stray write). It may be an acknowledged record: refuse to start, name
 *   file and offset, modify nothing. The same for a non-zero header that is not ours.
 * - Even with a mark, the damage is torn only in the last segment and only if every valid record after it
 *   belongs to the same write batch: only the last batch can be unsynced (one batch is in flight at a time,
 *   and each later batch is written only after the earlier one's fdatasync).
 *
 * Known limits, as in etcd: a payload that really holds a zeroed 512-byte-aligned stretch, or a bit flip in
 * the length field that stretches the last record into the zeroed tail, looks torn. In a **recycled**
 * segment the sectors a torn write missed hold its previous life's bytes, not zeros, so there no mark can be
 * seen: a bad frame in its last batch is taken as torn (or as the end of this life's data) by the batch rule
 * alone, unless it lies in one sector with this life's batch sequence (writtenInOneSector): then it is damage.
 *
 * The end of data is an all-zero header in a zero-filled segment, and the first frame that does not
 * validate in a recycled one (what follows is the previous life's data).
 */
export function scanSegment(buf: Uint8Array, file: string, o: ScanOptions): ScannedSegment {
  const salt = segmentSalt(o.seq);
  const records: ScannedRecord[] = [];
  let offset = segmentHeaderBytes;
  let lastBatchSeq: number | undefined;
  let lastEndedBatch = true;
  for (;;) {
    const frame = readFrame(buf, offset, buf.length, salt);
    if (frame.kind === 'record') {
      records.push({ type: frame.type, offset, payload: frame.payload });
      lastBatchSeq = frame.batchSeq;
      lastEndedBatch = frame.lastInBatch;
      offset = frame.next;
      continue;
    }
    // The batch the damaged spot belongs to: the last good record's, unless that record ended its batch.
    const prev = lastBatchSeq ?? o.prevBatchSeq;
    const damagedSeq = lastEndedBatch ? (prev === undefined ? undefined : (prev + 1) >>> 0) : prev;
    if (frame.kind === 'bad' && o.recycled && writtenInOneSector(buf, frame, damagedSeq)) {
      throw new WalCorruptError(file, offset, `${writtenWhole(frame)} (it lies in one sector, and its header is of this life of the recycled segment)`);
    }
    const later = validRecordsAfter(buf, offset + 8, salt, damagedSeq);
    if (later.seqs.length === 0) {
      // Nothing of this life follows. In a recycled segment the rest is the previous life: harmless.
      if (o.recycled) return { file, records, end: offset, lastBatchSeq };
      if (frame.kind === 'zero' && firstNonZero(buf, offset) < 0) return { file, records, end: offset, lastBatchSeq };
    }
    const mark = frame.kind === 'zero' ? 'an all-zero record header with data after it' : tornMark(buf, frame);
    const what = frame.kind === 'zero' ? (later.seqs.length === 0 ? 'junk after the last record' : 'valid records after the end-of-data marker') : frame.reason;
    if (frame.kind === 'bad' && mark === undefined && !o.recycled) throw new WalCorruptError(file, offset, writtenWhole(frame));
    const reason = mark === undefined ? `${what}; torn write: in a recycled segment, by the batch rule alone` : `${what}; torn write: ${mark}`;
    const notLast = `${what}; not a torn write: the segment is not the last one (only the last batch can be unsynced)`;
    if (later.seqs.length === 0) {
      if (!o.isLast) throw new WalCorruptError(file, offset, notLast);
      return { file, records, end: offset, lastBatchSeq, tornAt: { offset, reason, clearTo: dataExtent(buf, offset) } };
    }
    const onlyThatBatch = later.seqs.every((s) => s === (damagedSeq ?? later.seqs[0]));
    if (!o.isLast) throw new WalCorruptError(file, offset, notLast);
    if (!onlyThatBatch) throw new WalCorruptError(file, offset, `${what}; not a torn write: records of a later batch follow, so its batch was synced`);
    const clearTo = o.recycled ? later.end : dataExtent(buf, offset);
    return { file, records, end: offset, lastBatchSeq, tornAt: { offset, reason, clearTo } };
  }
}

export const sectorBytes = 512;

/** The mark of a write cut short on a bad frame (see scanSegment), or undefined when it was written whole. */
export function tornMark(buf: Uint8Array, frame: BadFrame): string | undefined {
  if (frame.shape === 'cut') return 'the file ends inside the record';
  const zero = zeroSectorPart(buf, frame.start, frame.frameEnd);
  return zero === undefined ? undefined : `its part in the sector at offset ${zero} is all zeros (never written)`;
}

/**
 * In a recycled segment a sector a torn write missed holds the previous life's bytes, so no zero marks it.
 * But a record that lies in one sector was written by one sector write, whole or not at all: if its header
 * carries the batch sequence this life expects there (the previous life's sequences are all older), that
 * sector was written in this life, with the whole record, and a CRC mismatch is damage.
 */
function writtenInOneSector(buf: Uint8Array, frame: BadFrame, expectedSeq: number | undefined): boolean {
  if (frame.shape !== 'crc' || expectedSeq === undefined) return false;
  if (Math.floor(frame.start / sectorBytes) !== Math.floor((frame.frameEnd - 1) / sectorBytes)) return false;
  return batchSeqAt(buf, frame.start) === expectedSeq;
}

/** The first 512-byte sector whose part inside [start, end) is all zeros (etcd's chunks), or undefined. */
export function zeroSectorPart(buf: Uint8Array, start: number, end: number): number | undefined {
  for (let at = start; at < end; ) {
    const stop = Math.min(end, (Math.floor(at / sectorBytes) + 1) * sectorBytes);
    if (isZero(buf, at, stop)) return Math.floor(at / sectorBytes) * sectorBytes;
    at = stop;
  }
  return undefined;
}

function writtenWhole(frame: BadFrame): string {
  const declared = frame.frameEnd - frame.start;
  if (frame.shape === 'crc') {
    return `CRC mismatch in a complete record (walpb: crc mismatch): all ${declared} bytes it declares are in the file and no sector of it is zero, so it was written whole and changed afterwards, not torn`;
  }
  return `${frame.reason}: the header was written (no sector of it is zero) but is not a record header, so the log was damaged after it was written, not torn`;
}

/**
 * Batch sequences of the valid records at 8-aligned offsets at or after `from`, and where the last ends.
 *
 * `oldestSeq`: the batch the damaged spot belongs to; every record of this life after it has that sequence or
 * a later one (sequences only grow, and the CRC covers the header's). A frame with an older sequence cannot
 * validate, so its CRC is not computed: a recycled segment's tail is up to its whole size of the previous
 * life's well-formed frames, and checksumming each of them cost a restart after kill -9 more CPU than the
 * rest of the log's read (issue 34). Older: behind by less than 2^31, so a wrapped u32 still counts as newer.
 */
function validRecordsAfter(buf: Uint8Array, from: number, salt: number, oldestSeq: number | undefined): { seqs: number[]; end: number } {
  const seqs: number[] = [];
  let end = from;
  let offset = (from + 7) & ~7;
  while (offset + 16 <= buf.length) {
    if (buf[offset] === 0 && buf[offset + 4] === 0) {
      // Skip zero runs natively (a preallocated tail is megabytes of zeros).
      const nonZero = firstNonZero(buf, offset);
      if (nonZero < 0) break;
      if (nonZero >= offset + 8) {
        offset = nonZero & ~7;
        continue;
      }
    }
    // Cheap plausibility test before the full frame check (a recycled tail is megabytes of old records).
    const type = buf[offset + 4]!;
    if (type >= 1 && type <= 3 && (buf[offset + 5]! & ~1) === 0 && buf[offset + 6] === 0 && buf[offset + 7] === 0 && !olderThan(batchSeqAt(buf, offset), oldestSeq)) {
      const frame = readFrame(buf, offset, buf.length, salt);
      if (frame.kind === 'record') {
        seqs.push(frame.batchSeq);
        offset = end = frame.next;
        continue;
      }
    }
    offset += 8;
  }
  return { seqs, end };
}

function batchSeqAt(buf: Uint8Array, at: number): number {
  return (buf[at + 8]! | (buf[at + 9]! << 8) | (buf[at + 10]! << 16) | (buf[at + 11]! << 24)) >>> 0;
}

/** `seq` comes before `oldest` in u32 sequence order (behind it by less than 2^31). */
function olderThan(seq: number, oldest: number | undefined): boolean {
  if (oldest === undefined) return false;
  const behind = (oldest - seq) >>> 0;
  return behind !== 0 && behind < 0x80000000;
}

const zeroChunk = Buffer.alloc(64 * 1024);

/** Index of the first non-zero byte at or after `from`, or -1. Compares whole chunks natively for speed. */
export function firstNonZero(buf: Uint8Array, from: number): number {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.length);
  let i = from;
  while (i < b.length) {
    const end = Math.min(b.length, i + zeroChunk.length);
    if (b.compare(zeroChunk, 0, end - i, i, end) === 0) {
      i = end;
      continue;
    }
    for (let j = i; j < end; j++) if (b[j] !== 0) return j;
    assert(false, 'compare and scan disagree');
  }
  return -1;
}

/** Offset just past the last non-zero byte (the extent a repair must zero), at least `from`. */
export function dataExtent(buf: Uint8Array, from: number): number {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.length);
  let end = b.length;
  while (end > from) {
    const start = Math.max(from, end - zeroChunk.length);
    if (b.compare(zeroChunk, 0, end - start, start, end) !== 0) {
      for (let i = end - 1; i >= start; i--) if (b[i] !== 0) return i + 1;
    }
    end = start;
  }
  return from;
}
