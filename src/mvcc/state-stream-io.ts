/**
 * A store's backend as a state stream (state-stream.ts format) and back: the export a follower or a backup
 * reads from a consistent backend view, and the import that rebuilds a backend (and the key index) from one.
 */
import { assert } from '../base/assert.js';
import { buckets, type Backend, type BackendView, type BatchOp } from './backend.js';
import { decodeKeyValueMeta } from './kv-codec.js';
import type { MvccCore } from './kv-core.js';
import { latin1, readU64 } from './kv-meta.js';
import { bytesToRevision } from './revision.js';
import { revCode } from './rev-code.js';
import { StateStreamDecoder, StateStreamEncoder } from './state-stream.js';

/** Ops per backend batch while importing a snapshot. */
const importBatchOpsMax = 1000;

/**
 * A state stream whose framing and checksum were already verified whole (as SnapshotDataDir does while it
 * receives one): the import reads it once instead of checking it first.
 */
export interface CheckedSnapshot {
  checked: () => AsyncIterable<Uint8Array>;
}

/** A snapshot source that can be read more than once (unless checked, it is checked whole before the backend is cleared). */
export type SnapshotSource = Uint8Array | (() => AsyncIterable<Uint8Array>) | CheckedSnapshot;

/** What exportSnapshot hands out: a consistent copy of the backend, streamed. */
export interface SnapshotExport {
  /** The applied Raft index the copy is exactly as of, and its term. */
  consistentIndex: number;
  term: number;
  /** The meta bucket (a few small entries, by their latin1 key), e.g. what the server stores beside the index. */
  meta: Map<string, Uint8Array>;
  /** The state stream (state-stream.ts format); may be read more than once, until close(). */
  chunks(): AsyncIterable<Uint8Array>;
  /** The backend view behind the copy: call once the copy is no longer read. */
  view: BackendView;
}

async function* chunksOf(source: SnapshotSource): AsyncIterable<Uint8Array> {
  if (source instanceof Uint8Array) yield source;
  else if (typeof source === 'function') yield* source();
  else yield* source.checked();
}

async function* streamView(view: BackendView): AsyncIterable<Uint8Array> {
  const encoder = new StateStreamEncoder();
  for (const bucket of buckets) {
    for await (const [k, v] of view.scan(bucket)) {
      const chunk = encoder.add(bucket, k, v);
      if (chunk !== undefined) yield chunk;
    }
  }
  yield* encoder.finish();
}

/** The export of a backend view (taken in the store's I/O queue, after a flush). */
export async function exportView(view: BackendView): Promise<SnapshotExport> {
  const meta = new Map<string, Uint8Array>();
  for await (const [k, v] of view.scan('meta')) meta.set(latin1(k), v);
  const index = meta.get('consistent_index');
  const term = meta.get('term');
  return {
    consistentIndex: index === undefined ? 0 : readU64(index),
    term: term === undefined ? 0 : readU64(term),
    meta,
    chunks: () => streamView(view),
    view,
  };
}

/**
 * Read a whole state stream to check it, before anything is cleared (a damaged one changes nothing); a
 * CheckedSnapshot was checked as it was received and is not read again here (its checksum is still verified
 * at the end of writeSnapshotInto, which then fails on a file damaged since it was received).
 */
export async function checkSnapshot(source: SnapshotSource): Promise<void> {
  if (typeof source === 'object' && !(source instanceof Uint8Array)) return;
  const check = new StateStreamDecoder();
  for await (const chunk of chunksOf(source)) check.check(chunk);
  check.end();
}

/**
 * Write a (checked) state stream into a cleared backend in bounded batches, loading its revisions into
 * `core` (an empty one); one batch is written while the next is decoded. The consistent index goes in last,
 * so a crash part-way leaves a backend that says it is empty (index 0), never one that claims data it lacks.
 */
export async function writeSnapshotInto(backend: Backend, core: MvccCore, source: SnapshotSource): Promise<{ consistentIndex: number; term: number }> {
  // The key index is built from the records as they are written: reading the backend back would read
  // every value a second time.
  const decoder = new StateStreamDecoder();
  let batch: BatchOp[] = [];
  let last: BatchOp[] = [];
  let consistentIndex = 0;
  let term = 0;
  // Awaited before the next write (LevelDB batches from the pool threads could land out of order) and at
  // the end; the catch only keeps a failure from being reported as unhandled before that await.
  let writing: Promise<void> = Promise.resolve();
  for await (const chunk of chunksOf(source)) {
    for (const op of decoder.push(chunk)) {
      assert(op.type === 'put', 'a snapshot holds puts only');
      if (op.bucket === 'key') {
        const { rev, tombstone } = bytesToRevision(op.key);
        core.load(revCode(rev.main, rev.sub, tombstone), tombstone, decodeKeyValueMeta(op.value));
      }
      if (op.bucket === 'meta' && latin1(op.key) === 'consistent_index') {
        last = [op];
        consistentIndex = readU64(op.value);
      } else {
        if (op.bucket === 'meta' && latin1(op.key) === 'term') term = readU64(op.value);
        batch.push(op);
      }
      if (batch.length >= importBatchOpsMax) {
        await writing;
        writing = backend.write(batch);
        writing.catch(() => {});
        batch = [];
      }
    }
  }
  await writing;
  decoder.end();
  await backend.write(batch.concat(last));
  return { consistentIndex, term };
}
