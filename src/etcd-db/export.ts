/**
 * Our backend → an etcd snapshot file: a bbolt database with etcd's buckets (buckets.ts), streamed
 * from one consistent backend view, bucket by bucket, key by key (bounded memory), optionally followed by
 * the SHA-256 of the database bytes, which is how `etcdctl snapshot save` leaves a file and what
 * `etcdctl snapshot restore` checks.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { compareBytes, utf8 } from '../base/bytes.js';
import { BboltWriter } from '../bbolt/writer.js';
import type { BackendView } from '../mvcc/backend.js';
import type { SnapshotExport } from '../mvcc/kv-store.js';
import { publishFile } from '../wal/atomic-file.js';
import { NodeFsPort } from '../wal/fs-port.js';
import { snapshotBuckets, type SnapshotBucket } from './buckets.js';

const nodeFs = new NodeFsPort();

export interface EtcdSnapshotResult {
  /** Bytes of the bbolt database (without the trailer). */
  dbBytes: number;
  /** SHA-256 of the database bytes, hex. */
  sha256: string;
  /** The Raft index the copy is exactly as of. */
  consistentIndex: number;
}

export interface WriteEtcdSnapshotOptions {
  /** Append the 32-byte SHA-256 trailer (default true: a file etcdctl would have saved). */
  trailer?: boolean;
  /** The server's version for the cluster bucket (default 3.5.0). */
  serverVersion?: string;
  /** More buckets (or replacements by name) beside the standard ones. */
  buckets?: readonly SnapshotBucket[];
  /** Called every 10,000 entries written, with the count so far, for progress. */
  onProgress?: (entriesWritten: number) => void;
}

/** Write `view` (a consistent backend view; not closed here) to `path` as an etcd snapshot. */
export async function writeEtcdSnapshot(view: BackendView, path: string, options: WriteEtcdSnapshotOptions = {}): Promise<Omit<EtcdSnapshotResult, 'consistentIndex'>> {
  const byName = new Map<string, SnapshotBucket>();
  for (const b of [...snapshotBuckets, ...(options.buckets ?? [])]) byName.set(b.name, b);
  const ordered = [...byName.values()].sort((a, b) => compareBytes(utf8(a.name), utf8(b.name)));
  const ctx = { view, serverVersion: options.serverVersion ?? '3.5.0' };
  const writer = await BboltWriter.create(path);
  let dbBytes: number;
  try {
    let entries = 0;
    for (const bucket of ordered) {
      await writer.bucket(utf8(bucket.name), counted(bucket.entries(ctx), () => {
        if (++entries % 10_000 === 0) options.onProgress?.(entries);
      }));
    }
    dbBytes = (await writer.finish()).sizeBytes;
  } catch (err) {
    await writer.abort();
    await rm(path, { force: true });
    throw err;
  }
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  const digest = hash.digest();
  if (options.trailer ?? true) {
    const file = await open(path, 'a');
    try {
      await file.write(digest);
      await file.sync();
    } finally {
      await file.close();
    }
  }
  return { dbBytes, sha256: digest.toString('hex') };
}

async function* counted<T>(source: AsyncIterable<T>, tick: () => void): AsyncIterable<T> {
  for await (const x of source) {
    tick();
    yield x;
  }
}

/** What saveSnapshotFile needs: the KvStore (server.state.store), or anything exporting the same way. */
export interface SnapshotExporter {
  exportSnapshot(): Promise<SnapshotExport>;
}

/** A running server (its current store: a Raft snapshot install replaces it), or a store. */
export type SnapshotHandle = SnapshotExporter | { readonly state: { readonly store: SnapshotExporter } };

/**
 * A consistent etcd-format snapshot of a running server or store into `path` (written as `path.part`, then
 * published whole: wal/atomic-file.ts), with the SHA-256 trailer: the file `etcdctl snapshot save` would have written.
 */
export async function saveSnapshotFile(handle: SnapshotHandle, path: string, options: Omit<WriteEtcdSnapshotOptions, 'trailer'> = {}): Promise<EtcdSnapshotResult> {
  const store = 'state' in handle ? handle.state.store : handle;
  const exported = await store.exportSnapshot();
  const part = `${path}.part`;
  try {
    const r = await writeEtcdSnapshot(exported.view, part, { ...options, trailer: true });
    await publishFile(nodeFs, part, path);
    return { ...r, consistentIndex: exported.consistentIndex };
  } catch (err) {
    await rm(part, { force: true });
    throw err;
  } finally {
    await exported.view.close();
  }
}
