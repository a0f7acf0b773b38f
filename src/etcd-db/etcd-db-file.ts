/**
 * Reading an etcd snapshot file (ours or one etcd/etcdctl wrote; export.ts writes one): the SHA-256 trailer
 * check (`etcdctl snapshot restore`'s), `snapshot status` (etcdctl 3.4's fields and hash), and its contents as
 * a restore takes them (backup/snapshot-restore.ts imports them into a data directory). Everything streams
 * from the file.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { utf8 } from '../base/bytes.js';
import { BboltReader } from '../bbolt/reader.js';
import { decodeLeaseRecord, type LeaseRecord } from '../mvcc/lease-codec.js';
import { Crc32c } from '../mvcc/kv-codec.js';
import { bytesToRevision } from '../mvcc/revision.js';
import type { BatchOp } from '../mvcc/backend.js';
import { snapshotBuckets } from './buckets.js';
import { bucketNames, metaKeys } from './schema.js';

const sha256Bytes = 32;

/** A snapshot file (or source) that cannot be restored: the operator's error, answered without a stack. */
export class RestoreError extends Error {
  override name = 'RestoreError';
}

/** etcdctl's rule: a saved snapshot is pages (a multiple of 512 bytes) followed by their SHA-256. */
export function hasHashTrailer(sizeBytes: number): boolean {
  return sizeBytes % 512 === sha256Bytes;
}

/** Check the trailer; throws with etcdctl's message on a mismatch. Resolves false when there is none. */
export async function verifySnapshotHash(path: string): Promise<boolean> {
  const { size } = await stat(path);
  if (!hasHashTrailer(size)) return false;
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { start: 0, end: size - sha256Bytes - 1, highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  const file = await open(path, 'r');
  const trailer = Buffer.alloc(sha256Bytes);
  try {
    await file.read(trailer, 0, sha256Bytes, size - sha256Bytes);
  } finally {
    await file.close();
  }
  const computed = hash.digest();
  if (!computed.equals(trailer)) throw new RestoreError(`expected sha256 ${trailer.toString('hex')}, got ${computed.toString('hex')}`);
  return true;
}

export interface SnapshotStatus {
  /** CRC-32C over bucket names, keys and values in file order (etcdctl's hash). */
  hash: number;
  revision: number;
  /** Entries in all buckets (etcdctl 3.4 counts every bucket's keys). */
  totalKey: number;
  totalSize: number;
}

/** `etcdctl snapshot status`, offline. */
export async function snapshotStatus(path: string): Promise<SnapshotStatus> {
  const reader = await BboltReader.open(path);
  try {
    const crc = new Crc32c();
    let revision = 0;
    let totalKey = 0;
    for await (const b of reader.buckets()) {
      crc.update(b.name);
      const isKey = Buffer.from(b.name).toString('latin1') === bucketNames.key;
      for await (const e of reader.bucketEntries(b.header)) {
        crc.update(e.key);
        // bbolt's ForEach hands a nested bucket's value as nil.
        if (!e.bucket) crc.update(e.value);
        if (isKey) revision = revisionOfKey(e.key);
        totalKey++;
      }
    }
    return { hash: crc.sum(), revision, totalKey, totalSize: reader.sizeBytes };
  } finally {
    await reader.close();
  }
}

function revisionOfKey(key: Uint8Array): number {
  try {
    return bytesToRevision(key).rev.main;
  } catch {
    throw new RestoreError('the key bucket holds a key that is not a revision (not an etcd snapshot?)');
  }
}

/** A snapshot file's contents, as a restore takes them (one open reader: read before `use` resolves). */
export interface SnapshotContents {
  /** The key bucket's entries: revision → KeyValue, in revision order. */
  keyEntries: AsyncIterable<[Uint8Array, Uint8Array]>;
  leases: Iterable<LeaseRecord> | AsyncIterable<LeaseRecord>;
  /** The compaction the meta bucket records (scheduled or finished, the later). */
  compactRevision: number;
  /** Buckets with a restore hook (buckets.ts), as our backend's puts. */
  raw: AsyncIterable<BatchOp & { type: 'put' }>;
}

/** Opens an etcd snapshot file (ours or etcd's) for `use`, and closes it once `use` settles. */
export async function readSnapshotFile<T>(path: string, use: (contents: SnapshotContents) => Promise<T>): Promise<T> {
  const reader = await BboltReader.open(path);
  try {
    const header = async (name: string): Promise<Uint8Array | undefined> => reader.bucketHeader(utf8(name));
    const keyBucket = await header(bucketNames.key);
    if (keyBucket === undefined) throw new RestoreError(`${path}: no "key" bucket: not an etcd snapshot`);
    const leaseBucket = await header(bucketNames.lease);
    const leases = leaseBucket === undefined ? [] : leasesOf(reader, leaseBucket);
    const compactRevision = await compactRevisionOf(reader, await header(bucketNames.meta));
    return await use({ keyEntries: reader.entries(keyBucket), leases, compactRevision, raw: restoredBuckets(reader) });
  } finally {
    await reader.close();
  }
}

async function* leasesOf(reader: BboltReader, header: Uint8Array): AsyncIterable<LeaseRecord> {
  for await (const [, v] of reader.entries(header)) yield decodeLeaseRecord(v);
}

async function compactRevisionOf(reader: BboltReader, meta: Uint8Array | undefined): Promise<number> {
  if (meta === undefined) return 0;
  let scheduled = 0;
  let finished = 0;
  for await (const [k, v] of reader.entries(meta)) {
    const name = Buffer.from(k).toString('latin1');
    if (name === metaKeys.scheduledCompact) scheduled = revisionOfKey(v);
    if (name === metaKeys.finishedCompact) finished = revisionOfKey(v);
  }
  // A compaction scheduled but not finished is finished by the store when it opens.
  return Math.max(scheduled, finished);
}

/** Buckets with a restore hook (buckets.ts), carried into our backend as they translate. */
async function* restoredBuckets(reader: BboltReader): AsyncIterable<BatchOp & { type: 'put' }> {
  for (const b of snapshotBuckets) {
    if (b.restore === undefined) continue;
    const header = await reader.bucketHeader(utf8(b.name));
    if (header === undefined) continue;
    for await (const e of b.restore(reader.entries(header))) yield { type: 'put', ...e };
  }
}
