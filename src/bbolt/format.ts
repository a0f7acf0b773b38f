/**
 * bbolt's on-disk format (go.etcd.io/bbolt, internal/common/{page,meta}.go), as etcd 3.4/3.5 write it on
 * amd64/arm64: little-endian, fixed-size structs cast straight onto the file's bytes.
 *
 *   page header (16 bytes): id u64 | flags u16 | count u16 | overflow u32   (overflow: extra pages it spans)
 *   meta (after the header of pages 0 and 1): magic u32 | version u32 | pageSize u32 | flags u32 |
 *        root bucket {root pgid u64, sequence u64} | freelist pgid u64 | pgid (high-water mark) u64 |
 *        txid u64 | checksum u64 = FNV-1a 64 of the 56 bytes before it
 *   branch element (16 bytes): pos u32 | ksize u32 | pgid u64        pos: from the element to its key
 *   leaf element (16 bytes):   flags u32 | pos u32 | ksize u32 | vsize u32   (flags 1: the value is a bucket)
 *   bucket value: {root pgid u64, sequence u64}; root 0 means inline: a leaf page follows in the value itself
 *   freelist page: count ids (u64, sorted); count 0xffff means the real count is the first u64
 */
import { assert } from '../base/assert.js';

export const pageHeaderBytes = 16;
export const elementBytes = 16;
export const bucketHeaderBytes = 16;
export const metaBytes = 64;
/** What etcd gets from os.Getpagesize() on the boards and servers it runs on. */
export const defaultPageBytes = 4096;

export const branchPageFlag = 0x01;
export const leafPageFlag = 0x02;
export const metaPageFlag = 0x04;
export const freelistPageFlag = 0x10;
export const bucketLeafFlag = 0x01;

export const magic = 0xed0cdaed;
export const formatVersion = 2;
/** meta.freelist when the freelist is not persisted (bbolt's NoFreelistSync). */
export const noFreelist = 0xffff_ffff_ffff_ffffn;

export interface PageHeader {
  id: number;
  flags: number;
  count: number;
  overflow: number;
}

export interface Meta {
  pageBytes: number;
  flags: number;
  rootPgid: number;
  rootSequence: bigint;
  /** undefined: not persisted (NoFreelistSync). */
  freelistPgid: number | undefined;
  /** Pages in use: the file holds pages [0, pgid). */
  pgid: number;
  txid: bigint;
}

export class BboltFormatError extends Error {
  override name = 'BboltFormatError';
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

/** A page id as a JS number; ids past 2⁵³ would mean a file of 36 petabytes. */
export function readPgid(dv: DataView, offset: number): number {
  const id = dv.getBigUint64(offset, true);
  if (id > BigInt(Number.MAX_SAFE_INTEGER)) throw new BboltFormatError(`page id ${id} out of range`);
  return Number(id);
}

export function readPageHeader(b: Uint8Array, offset = 0): PageHeader {
  if (b.length < offset + pageHeaderBytes) throw new BboltFormatError('truncated page header');
  const dv = view(b);
  return { id: readPgid(dv, offset), flags: dv.getUint16(offset + 8, true), count: dv.getUint16(offset + 10, true), overflow: dv.getUint32(offset + 12, true) };
}

export function writePageHeader(b: Uint8Array, offset: number, h: PageHeader): void {
  const dv = view(b);
  dv.setBigUint64(offset, BigInt(h.id), true);
  dv.setUint16(offset + 8, h.flags, true);
  dv.setUint16(offset + 10, h.count, true);
  dv.setUint32(offset + 12, h.overflow, true);
}

const fnvOffset = 0xcbf29ce484222325n;
const fnvPrime = 0x100000001b3n;
const u64 = (1n << 64n) - 1n;

/** FNV-1a, 64 bits (Go's hash/fnv New64a). */
export function fnv1a64(b: Uint8Array): bigint {
  let h = fnvOffset;
  for (const byte of b) h = ((h ^ BigInt(byte)) * fnvPrime) & u64;
  return h;
}

/** The meta struct (64 bytes, checksum filled in). */
export function encodeMeta(m: Meta): Uint8Array {
  const out = new Uint8Array(metaBytes);
  const dv = view(out);
  dv.setUint32(0, magic, true);
  dv.setUint32(4, formatVersion, true);
  dv.setUint32(8, m.pageBytes, true);
  dv.setUint32(12, m.flags, true);
  dv.setBigUint64(16, BigInt(m.rootPgid), true);
  dv.setBigUint64(24, m.rootSequence, true);
  dv.setBigUint64(32, m.freelistPgid === undefined ? noFreelist : BigInt(m.freelistPgid), true);
  dv.setBigUint64(40, BigInt(m.pgid), true);
  dv.setBigUint64(48, m.txid, true);
  dv.setBigUint64(56, fnv1a64(out.subarray(0, 56)), true);
  return out;
}

/** Decode and validate a meta struct as bbolt's Meta.Validate does; throws BboltFormatError. */
export function decodeMeta(b: Uint8Array): Meta {
  if (b.length < metaBytes) throw new BboltFormatError('truncated meta page');
  const dv = view(b);
  if (dv.getUint32(0, true) !== magic) throw new BboltFormatError('invalid database (bad magic)');
  if (dv.getUint32(4, true) !== formatVersion) throw new BboltFormatError(`version mismatch (${dv.getUint32(4, true)})`);
  if (dv.getBigUint64(56, true) !== fnv1a64(b.subarray(0, 56))) throw new BboltFormatError('checksum error in meta page');
  const freelist = dv.getBigUint64(32, true);
  const m: Meta = {
    pageBytes: dv.getUint32(8, true),
    flags: dv.getUint32(12, true),
    rootPgid: readPgid(dv, 16),
    rootSequence: dv.getBigUint64(24, true),
    freelistPgid: freelist === noFreelist ? undefined : readPgid(dv, 32),
    pgid: readPgid(dv, 40),
    txid: dv.getBigUint64(48, true),
  };
  const p = m.pageBytes;
  if (p < 512 || p > 65536 || (p & (p - 1)) !== 0) throw new BboltFormatError(`invalid page size ${p}`);
  if (m.rootPgid >= m.pgid || (m.freelistPgid !== undefined && m.freelistPgid >= m.pgid)) {
    throw new BboltFormatError('meta page points past the high-water mark');
  }
  return m;
}

/** Bytes a page with this content needs, rounded up to whole pages. */
export function pagesFor(contentBytes: number, pageBytes: number): number {
  assert(contentBytes > 0, 'a page holds at least its header');
  return Math.ceil(contentBytes / pageBytes);
}
