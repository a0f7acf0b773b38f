/**
 * The MVCC key-value store: etcd's KV semantics over an in-memory key index, with the values in a Backend.
 *
 * Memory holds the index (keys and their revisions), the values written since the last flush and a bounded
 * cache of hot values; everything else is read from the backend with synchronous point reads, so reads and
 * apply stay synchronous (as etcd reads bbolt through mmap). Every change goes to the shared WriteBuffer;
 * `flush()` takes the buffer synchronously and writes it with the consistent index in one atomic batch, so
 * a restart loads exactly the state at the persisted consistent index and Raft replays the rest (W12).
 * All backend I/O (flushes, physical compaction chunks, snapshot export, defragment) runs through one FIFO
 * queue, which keeps batches in order and makes an export a consistent point-in-time copy.
 *
 * Entries may be applied before the Raft log holds them durably (RaftConfig.applyUnstable), so a flush
 * writes only the effects of entries up to the durable index (setDurableIndex): the buffer is cut where each
 * applied index ends (FlushMark), and what lies beyond the durable index waits for the log's next ack. A crash
 * then never leaves a consistent index the log cannot replay past.
 */
import { assert, assertSafeInteger } from '../base/assert.js';
import {
  compactionBatchKeysMax, quotaBackendBytesDefault, quotaBackendBytesMax, reclaimAtQuotaFraction, reclaimGarbageFraction,
  valueCacheBytesDefault,
} from '../base/limits.js';
import { buckets, WriteBuffer, type Backend, type BackendView, type BatchOp } from './backend.js';
import { chunked, compactInMemory, finishedCompactKey, scheduledCompactKey } from './compaction.js';
import { hashBounds, hashEntries, type KvHash } from './hash.js';
import { encodeIndexCheckpoint, IndexCheckpointError, IndexCheckpointReader } from './index-checkpoint.js';
import { KeyIndex } from './key-index.js';
import { decodeKeyValue } from './kv-codec.js';
import { MvccCore, type WriteListener } from './kv-core.js';
import { rangeRequest } from './kv-read.js';
import type { LeaseHooks } from './lease-hooks.js';
import { bytesToRevision, revisionToBytes } from './revision.js';
import { codeIsTombstone, codeMain, codeToBytes, revCode } from './rev-code.js';
import { ValueStore } from './value-store.js';
import { SnapshotDecoder, SnapshotEncoder } from './snapshot.js';
import { applyDeleteRange, applyPut, applyTxn, checkPut } from './txn.js';
import {
  EventType, MvccError, type DeleteRangeRequest, type DeleteRangeResponse, type Event, type PutRequest, type PutResponse,
  type RangeRequest, type RangeResponse, type TxnRequest, type TxnResponse,
} from './types.js';

export interface KvStoreOptions {
  /** NOSPACE threshold; 0 or absent: etcd's 2 GiB default; negative: no quota; clamped to 8 GiB. */
  quotaBackendBytes?: number;
  leases?: LeaseHooks;
  /** Bytes of decoded values cached in memory (default valueCacheBytesDefault). */
  valueCacheBytes?: number;
  /** A key index saved at the last clean stop (index-checkpoint.ts), used when it matches the backend. */
  indexCheckpoint?: AsyncIterable<Uint8Array>;
}

const consistentIndexKey = new TextEncoder().encode('consistent_index');
/** etcd 3.5 keeps the term of the consistent index beside it; a snapshot sent to a follower needs both. */
const termKey = new TextEncoder().encode('term');
/** Ops per backend batch while importing a snapshot. */
const importBatchOpsMax = 1000;

/** A snapshot source that can be read more than once (it is checked whole before the backend is cleared). */
export type SnapshotSource = Uint8Array | (() => AsyncIterable<Uint8Array>);

/** What exportSnapshot hands out: a consistent copy of the backend, streamed. */
export interface SnapshotExport {
  /** The applied Raft index the copy is exactly as of, and its term. */
  consistentIndex: number;
  term: number;
  /** The meta bucket (a few small entries, by their latin1 key), e.g. what the server stores beside the index. */
  meta: Map<string, Uint8Array>;
  /** The snapshot stream (snapshot.ts format); may be read more than once, until close(). */
  chunks(): AsyncIterable<Uint8Array>;
  /** The backend view behind the copy: call once the copy is no longer read. */
  view: BackendView;
}

function latin1(b: Uint8Array): string {
  let out = '';
  for (const byte of b) out += String.fromCharCode(byte);
  return out;
}

async function* chunksOf(source: SnapshotSource): AsyncIterable<Uint8Array> {
  if (source instanceof Uint8Array) yield source;
  else yield* source();
}

/**
 * Backend entries merged with unflushed ones, by revision: an unflushed revision the backend already has
 * (a flush that landed after the view was taken is not in it; one that landed before is in both) once.
 */
async function* withUnflushed(stored: AsyncIterable<[Uint8Array, Uint8Array]>, unflushed: [number, Uint8Array][]): AsyncIterable<[Uint8Array, Uint8Array]> {
  let next = 0;
  for await (const entry of stored) {
    const { rev, tombstone } = bytesToRevision(entry[0]);
    const code = revCode(rev.main, rev.sub, tombstone);
    while (next < unflushed.length && unflushed[next]![0] < code) {
      const [c, raw] = unflushed[next++]!;
      yield [codeToBytes(c), raw];
    }
    if (next < unflushed.length && unflushed[next]![0] === code) next++;
    yield entry;
  }
  for (; next < unflushed.length; next++) yield [codeToBytes(unflushed[next]![0]), unflushed[next]![1]];
}

async function* streamView(view: BackendView): AsyncIterable<Uint8Array> {
  const encoder = new SnapshotEncoder();
  for (const bucket of buckets) {
    for await (const [k, v] of view.scan(bucket)) {
      const chunk = encoder.add(bucket, k, v);
      if (chunk !== undefined) yield chunk;
    }
  }
  yield encoder.finish();
}

function u64Bytes(n: number): Uint8Array {
  const out = new Uint8Array(8);
  const view = new DataView(out.buffer);
  view.setUint32(0, Math.floor(n / 0x1_0000_0000));
  view.setUint32(4, n >>> 0);
  return out;
}

function readU64(b: Uint8Array): number {
  assert(b.length === 8, 'meta u64 length');
  const view = new DataView(b.buffer, b.byteOffset, 8);
  const n = view.getUint32(0) * 0x1_0000_0000 + view.getUint32(4);
  assertSafeInteger(n, 'meta u64');
  return n;
}

interface PhysicalJob {
  revision: number;
  /** Revision codes to delete from the 'key' bucket, ascending. */
  codes: number[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Where the buffered effects of the entries up to any index in [from, index] end (the entries after `from`
 * buffered nothing): the first `ops` buffered ops, the first `jobs` pending compactions, revision codes up to
 * `lastCode`.
 */
interface FlushMark {
  from: number;
  fromTerm: number;
  index: number;
  term: number;
  ops: number;
  jobs: number;
  lastCode: number;
}

/** Flushes between two refreshes of the backend's size estimate. */
export const flushesPerSizeRefresh = 16;

export class KvStore {
  readonly #backend: Backend;
  #flushes = 0;
  readonly #core: MvccCore;
  readonly #quotaBytes: number;
  #consistentIndex = 0;
  #term = 0;
  #flushedIndex = -1;
  /** Marks of applied indexes not flushed yet, oldest first; the current index's mark is implicit. */
  #marks: FlushMark[] = [];
  /** Flushes write no effect of an entry above this (Infinity: a store no log drives, as in tools and tests). */
  #durableIndex = Infinity;
  #io: Promise<void> = Promise.resolve();
  /** Compactions whose schedule is still in the buffer: their deletes start after the next flush. */
  #pendingJobs: PhysicalJob[] = [];
  #sizeBytes = 0;
  /** Bytes handed to the backend since #sizeBytes was measured (LevelDB's estimate misses its memtable). */
  #bytesSinceSize = 0;
  readonly #runningJobs = new Set<Promise<void>>();
  #loadedFrom: { checkpoint: boolean; reason?: string } = { checkpoint: false, reason: 'none given' };
  /** Revisions compaction dropped since the backend last rewrote its tables (reclaim() has work only then). */
  #droppedSinceReclaim = 0;
  #reclaiming: Promise<void> | undefined;

  private constructor(backend: Backend, options: KvStoreOptions) {
    this.#backend = backend;
    this.#core = new MvccCore(new WriteBuffer(), new ValueStore(backend, options.valueCacheBytes ?? valueCacheBytesDefault));
    const quota = options.quotaBackendBytes ?? 0;
    this.#quotaBytes = quota === 0 ? quotaBackendBytesDefault : quota < 0 ? Infinity : Math.min(quota, quotaBackendBytesMax);
  }

  /**
   * Load the store from the backend: the state exactly as of the persisted consistent index. With an index
   * checkpoint that matches the backend (written at the same consistent index and term), the key index comes
   * from it and only revisions after it are scanned; otherwise every revision is scanned (and `loadedFrom`
   * says why the checkpoint was not used).
   */
  static async open(backend: Backend, options: KvStoreOptions = {}): Promise<KvStore> {
    const index = await backend.get('meta', consistentIndexKey);
    const consistentIndex = index === undefined ? 0 : readU64(index);
    const termBytes = await backend.get('meta', termKey);
    const term = termBytes === undefined ? 0 : readU64(termBytes);
    let store = new KvStore(backend, options);
    let afterCode = -1;
    if (options.indexCheckpoint !== undefined) {
      try {
        afterCode = await store.#loadCheckpoint(options.indexCheckpoint, consistentIndex, term);
        store.#loadedFrom = { checkpoint: true };
      } catch (err) {
        if (!(err instanceof IndexCheckpointError)) throw err;
        store = new KvStore(backend, options);
        store.#loadedFrom = { checkpoint: false, reason: err.message };
      }
    }
    const core = store.#core;
    const scan = afterCode < 0 ? backend.scan('key') : backend.scan('key', { gte: codeToBytes(afterCode) });
    for await (const [k, v] of scan) {
      const { rev, tombstone } = bytesToRevision(k);
      const code = revCode(rev.main, rev.sub, tombstone);
      if (code <= afterCode) continue;
      core.load(code, tombstone, decodeKeyValue(v));
    }
    await store.#finishOpen(consistentIndex, term, options);
    return store;
  }

  /** After the key index is loaded: the meta the store keeps, a compaction to finish, the size, leases. */
  async #finishOpen(consistentIndex: number, term: number, options: KvStoreOptions): Promise<void> {
    const backend = this.#backend;
    const core = this.#core;
    this.#consistentIndex = consistentIndex;
    this.#term = term;
    this.#flushedIndex = consistentIndex;
    const scheduled = await backend.get('meta', scheduledCompactKey);
    if (scheduled !== undefined) {
      const rev = bytesToRevision(scheduled).rev.main;
      const codes = compactInMemory(core, rev);
      // etcd: a compaction may have removed every entry up to it; the revision never goes back.
      if (core.currentRev < rev) core.currentRev = rev;
      const finished = await backend.get('meta', finishedCompactKey);
      if (codes.length > 0 || finished === undefined || bytesToRevision(finished).rev.main !== rev) {
        this.#startPhysical({ revision: rev, codes, resolve: () => {}, reject: () => {} });
      }
    }
    this.#sizeBytes = await backend.sizeBytes();
    if (options.leases !== undefined) this.setLeaseHooks(options.leases);
  }

  /** Reads a checkpoint into this (empty) store; returns the last revision code it covers. */
  async #loadCheckpoint(source: AsyncIterable<Uint8Array>, consistentIndex: number, term: number): Promise<number> {
    const reader = new IndexCheckpointReader(source);
    const header = await reader.header();
    if (header.consistentIndex !== consistentIndex || header.term !== term) {
      throw new IndexCheckpointError(`stale: written at index ${header.consistentIndex} (term ${header.term}), the backend is at ${consistentIndex} (term ${term})`);
    }
    const core = this.#core;
    let codes = new Float64Array(Math.max(1024, header.keys));
    let n = 0;
    for await (const e of reader.entries()) {
      core.tree.appendLast(KeyIndex.restored(e.key, e.revs, e.createRevision, e.version, e.lease));
      if (n + e.revs.length > codes.length) {
        const grown = new Float64Array(Math.max(codes.length * 2, n + e.revs.length));
        grown.set(codes.subarray(0, n));
        codes = grown;
      }
      for (const code of e.revs) codes[n++] = code;
    }
    const sorted = codes.subarray(0, n).sort();
    if (n > 0 && sorted[n - 1] !== header.lastCode) throw new IndexCheckpointError('index checkpoint: last revision does not match its header');
    core.log.loadSorted(n === codes.length ? sorted : sorted.slice());
    core.currentRev = header.currentRev;
    core.compactRev = header.compactRev;
    core.lastCode = header.lastCode;
    return header.lastCode;
  }

  /** How the last open found the key index (a checkpoint, or a scan and why). */
  get loadedFrom(): { checkpoint: boolean; reason?: string } {
    return this.#loadedFrom;
  }

  /**
   * The key index as checkpoint frames (index-checkpoint.ts), for a member that has stopped applying and
   * flushed: the checkpoint is only valid for a backend at exactly this consistent index.
   */
  indexCheckpoint(): Iterable<Uint8Array> {
    const core = this.#core;
    assert(this.#flushedIndex === this.#consistentIndex && core.values.overlaySize === 0, 'index checkpoint of a store with unflushed writes');
    return encodeIndexCheckpoint({
      consistentIndex: this.#consistentIndex, term: this.#term, currentRev: core.currentRev, compactRev: core.compactRev,
      lastCode: core.lastCode, keys: core.tree.size,
    }, core.tree.all());
  }

  /**
   * Replace the backend's contents with a snapshot stream (from exportSnapshot), then open the store on it.
   * The stream is read twice: once whole to check it (a damaged one leaves the backend untouched), then into
   * the cleared backend in bounded batches. The consistent index goes in last, so a crash part-way leaves a
   * backend that says it is empty (index 0), never one that claims data it lacks.
   */
  static async importSnapshot(backend: Backend, source: SnapshotSource, options: KvStoreOptions = {}): Promise<KvStore> {
    const check = new SnapshotDecoder();
    for await (const chunk of chunksOf(source)) check.push(chunk);
    check.end();
    await backend.clear();
    // The key index is built from the records as they are written: reading the backend back would read
    // every value a second time.
    const store = new KvStore(backend, options);
    const core = store.#core;
    const decoder = new SnapshotDecoder();
    let batch: BatchOp[] = [];
    let last: BatchOp[] = [];
    let consistentIndex = 0;
    let term = 0;
    for await (const chunk of chunksOf(source)) {
      for (const op of decoder.push(chunk)) {
        assert(op.type === 'put', 'a snapshot holds puts only');
        if (op.bucket === 'key') {
          const { rev, tombstone } = bytesToRevision(op.key);
          core.load(revCode(rev.main, rev.sub, tombstone), tombstone, decodeKeyValue(op.value));
        }
        if (op.bucket === 'meta' && latin1(op.key) === 'consistent_index') {
          last = [op];
          consistentIndex = readU64(op.value);
        } else {
          if (op.bucket === 'meta' && latin1(op.key) === 'term') term = readU64(op.value);
          batch.push(op);
        }
        if (batch.length >= importBatchOpsMax) {
          await backend.write(batch);
          batch = [];
        }
      }
    }
    decoder.end();
    await backend.write(batch.concat(last));
    await store.#finishOpen(consistentIndex, term, options);
    return store;
  }

  get revision(): number {
    return this.#core.currentRev;
  }

  /** -1 until the first compaction, as etcd. */
  get compactRevision(): number {
    return this.#core.compactRev;
  }

  get consistentIndex(): number {
    return this.#consistentIndex;
  }

  /** Shared with the lessor, alarms and membership during apply; flushed together by flush(). */
  get buffer(): WriteBuffer {
    return this.#core.buffer;
  }

  /** Install the lessor's hooks; every live key with a lease is attached once. */
  setLeaseHooks(hooks: LeaseHooks): void {
    this.#core.hooks = hooks;
    for (const ki of this.#core.tree.all()) {
      if (ki.current() !== undefined && ki.lease !== 0n) hooks.attach(ki.lease, ki.key);
    }
  }

  /** The Raft index (and its term) of the entry being applied; written with the next flush. */
  setConsistentIndex(index: number, term = this.#term): void {
    assertSafeInteger(index, 'consistent index');
    assert(index >= this.#consistentIndex, `consistent index went back from ${this.#consistentIndex} to ${index}`);
    // Everything buffered so far is the effect of entries up to the previous index.
    if (index > this.#consistentIndex) this.#markApplied();
    this.#consistentIndex = index;
    this.#term = term;
  }

  /** The Raft log is durable up to `index`: flushes may write the effects of entries up to it. */
  setDurableIndex(index: number): void {
    assertSafeInteger(index, 'durable index');
    this.#durableIndex = index;
  }

  #currentMark(): FlushMark {
    const core = this.#core;
    const [index, term] = [this.#consistentIndex, this.#term];
    return { from: index, fromTerm: term, index, term, ops: core.buffer.size, jobs: this.#pendingJobs.length, lastCode: core.lastCode };
  }

  #markApplied(): void {
    const mark = this.#currentMark();
    const last = this.#marks.at(-1);
    // An entry that buffered nothing extends the last mark instead of adding one.
    if (last !== undefined && last.ops === mark.ops && last.jobs === mark.jobs) {
      last.index = mark.index;
      last.term = mark.term;
    } else {
      this.#marks.push(mark);
    }
  }

  /**
   * What a flush may write: the newest mark reaching the durable index, as of the highest index of it at or
   * below the durable index whose term is known, and how many of #marks it covers.
   */
  #flushableMark(): { mark: FlushMark; covered: number } | undefined {
    const durable = this.#durableIndex;
    if (this.#consistentIndex <= durable) return { mark: this.#currentMark(), covered: this.#marks.length };
    let covered = 0;
    while (covered < this.#marks.length && this.#marks[covered]!.from <= durable) covered++;
    if (covered === 0) return undefined;
    const m = this.#marks[covered - 1]!;
    if (m.index <= durable) return { mark: m, covered };
    // Terms never decrease along the log: equal at both ends, the durable index has that term as well.
    const at = m.term === m.fromTerm ? { index: durable, term: m.term } : { index: m.from, term: m.fromTerm };
    // The mark stays, for the entries above: from now on it starts where this flush ends.
    const part = { ...m, ...at };
    m.from = at.index;
    m.fromTerm = at.term;
    return { mark: part, covered: covered - 1 };
  }

  range(req: RangeRequest): RangeResponse {
    return rangeRequest(this.#core, req, this.#core.currentRev);
  }

  put(req: PutRequest): PutResponse {
    const core = this.#core;
    // etcd checks the lease before the key (the reverse of a put inside a txn).
    if (req.lease !== 0n && !(core.hooks?.exists(req.lease) ?? false)) throw new MvccError('leaseNotFound');
    checkPut(core, core.currentRev, req);
    const w = core.beginWrite();
    const resp = applyPut(w, core, req);
    w.end();
    return resp;
  }

  deleteRange(req: DeleteRangeRequest): DeleteRangeResponse {
    const w = this.#core.beginWrite();
    const resp = applyDeleteRange(w, this.#core, req);
    w.end();
    return resp;
  }

  txn(req: TxnRequest): TxnResponse {
    return applyTxn(this.#core, req);
  }

  /**
   * Compact at `revision` (etcd: 'compacted' when ≤ the compact revision, 'futureRev' when > the current
   * one). Reads see the result at once; `physicalDone` settles once the flush that persists the scheduled
   * compaction and the backend deletes (in chunks of compactionBatchKeysMax) are written.
   */
  compact(revision: number): { physicalDone: Promise<void> } {
    const core = this.#core;
    if (revision <= core.compactRev) throw new MvccError('compacted');
    if (revision > core.currentRev) throw new MvccError('futureRev');
    const codes = compactInMemory(core, revision);
    this.#droppedSinceReclaim += codes.length;
    core.buffer.put('meta', scheduledCompactKey, revisionToBytes({ main: revision, sub: 0 }));
    let job!: PhysicalJob;
    const physicalDone = new Promise<void>((resolve, reject) => {
      job = { revision, codes, resolve, reject };
    });
    this.#pendingJobs.push(job);
    return { physicalDone };
  }

  #enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.#io.then(task);
    this.#io = run.catch(() => {});
    return run;
  }

  #startPhysical(job: PhysicalJob): void {
    const running = this.#runPhysical(job);
    this.#runningJobs.add(running);
    void running.then(() => this.#runningJobs.delete(running));
  }

  async #runPhysical(job: PhysicalJob): Promise<void> {
    try {
      for (const chunk of chunked(job.codes, compactionBatchKeysMax)) {
        await this.#enqueue(() => this.#backend.write(chunk.map((code) => ({ type: 'del', bucket: 'key', key: codeToBytes(code) }))));
      }
      const finished = revisionToBytes({ main: job.revision, sub: 0 });
      await this.#enqueue(async () => {
        await this.#backend.write([{ type: 'put', bucket: 'meta', key: finishedCompactKey, value: finished }]);
        await this.#measureSize();
      });
      job.resolve();
      // A failed reclaim leaves the tables as they were; the backend's next write reports the failure.
      if (this.#reclaimWorthIt()) void this.reclaim().catch(() => {});
    } catch (err) {
      job.reject(err);
    }
  }

  /**
   * Write everything applied so far, with the consistent index, in one atomic batch. The buffer is taken
   * synchronously, so apply may continue while the write is in flight; flushes land in call order.
   */
  flush(): Promise<void> {
    const flushable = this.#flushableMark();
    if (flushable === undefined) return this.#io;
    const { mark, covered } = flushable;
    if (mark.ops === 0 && mark.index <= this.#flushedIndex) return this.#io;
    assert(mark.index >= this.#flushedIndex, `flush at ${mark.index} behind the flushed index ${this.#flushedIndex}`);
    const ops = this.#core.buffer.take(mark.ops);
    const jobs = this.#pendingJobs.splice(0, mark.jobs);
    this.#marks.splice(0, covered);
    for (const later of this.#marks) {
      later.ops -= mark.ops;
      later.jobs -= mark.jobs;
    }
    this.#flushedIndex = mark.index;
    ops.push({ type: 'put', bucket: 'meta', key: consistentIndexKey, value: u64Bytes(mark.index) });
    ops.push({ type: 'put', bucket: 'meta', key: termKey, value: u64Bytes(mark.term) });
    const upTo = mark.lastCode;
    for (const op of ops) this.#bytesSinceSize += op.key.length + (op.type === 'put' ? op.value.length : 0);
    // The backend's size estimate is a native call of its own; refreshing it on every flush showed in
    // profiles. Between refreshes the quota adds the bytes written since, so it never under-counts growth.
    const refreshSize = ++this.#flushes % flushesPerSizeRefresh === 0;
    const done = this.#enqueue(async () => {
      await this.#backend.write(ops);
      this.#core.values.flushed(upTo);
      if (refreshSize) await this.#measureSize();
    });
    for (const job of jobs) this.#startPhysical(job);
    return done;
  }

  async #measureSize(): Promise<void> {
    const pending = this.#bytesSinceSize;
    this.#sizeBytes = await this.#backend.sizeBytes();
    this.#bytesSinceSize -= pending;
  }

  /**
   * Flush everything applied so far (up to the durable index) and make the backend durable (fsync): after
   * this, the Raft log may release the entries the backend holds. Resolves with the index made durable.
   */
  async flushDurable(): Promise<number> {
    void this.flush();
    const index = this.#flushedIndex;
    await this.#enqueue(() => this.#backend.write([], { sync: true }));
    return index;
  }

  /** Resolves when all backend work queued so far (flushes, started compactions) is done. */
  async idle(): Promise<void> {
    while (this.#runningJobs.size > 0) await Promise.all([...this.#runningJobs]);
    await this.#io;
  }

  /**
   * A consistent point-in-time copy of every bucket, streamed from a backend view taken right after
   * everything applied so far is flushed (in the I/O queue, so no later batch is in it).
   */
  async exportSnapshot(): Promise<SnapshotExport> {
    void this.flush();
    let view!: BackendView;
    await this.#enqueue(async () => {
      view = this.#backend.view();
    });
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

  /** etcd's Defragment, serialized with the other backend writes. */
  defragment(): Promise<void> {
    return this.#enqueue(async () => {
      await this.#backend.defragment();
      await this.#measureSize();
    });
  }

  /**
   * Called before a write is refused for the quota. Deleted data stays in LevelDB's tables until LevelDB
   * compacts the tables holding it, so when compaction dropped revisions since the last reclaim, the
   * compaction's deletes are written, the tables rewritten (writes go on meanwhile) and the size measured
   * again. Concurrent callers share one reclaim; with nothing dropped since the last, it returns at once, so
   * a store full of live data refuses without rewriting anything.
   */
  reclaim(): Promise<void> {
    if (this.#reclaiming !== undefined) return this.#reclaiming;
    if (this.#droppedSinceReclaim === 0) return Promise.resolve();
    this.#reclaiming = (async () => {
      await this.flush();
      await Promise.all([...this.#runningJobs]);
      // A compaction whose schedule is not durable yet has not deleted anything: the next refusal retries.
      if (this.#pendingJobs.length === 0) this.#droppedSinceReclaim = 0;
      await this.#backend.defragment();
      await this.#enqueue(() => this.#measureSize());
    })().finally(() => {
      this.#reclaiming = undefined;
    });
    return this.#reclaiming;
  }

  /** See reclaimAtQuotaFraction: over that share of the quota, with enough dropped since the last reclaim. */
  #reclaimWorthIt(): boolean {
    if (this.#droppedSinceReclaim === 0 || this.dbSizeBytes() <= this.#quotaBytes * reclaimAtQuotaFraction) return false;
    return this.#droppedSinceReclaim >= this.#core.log.length * reclaimGarbageFraction;
  }

  /**
   * etcd's HashKV at `revision` (0: the current one). Streamed from a consistent backend view merged with the
   * writes not yet flushed, so hashing a large store never blocks apply or reads (the event loop turns
   * between backend batches). A compaction that lands while it runs changes what the hash covers: it starts
   * over then.
   */
  async hashKV(revision: number): Promise<KvHash> {
    const core = this.#core;
    for (;;) {
      const bounds = hashBounds(core, revision);
      const view = this.#backend.view();
      const unflushed = core.values.unflushed();
      try {
        const h = await hashEntries(core, bounds, withUnflushed(view.scan('key', { lt: bounds.end }), unflushed));
        if (core.compactRev === bounds.compactRev) return h;
      } finally {
        await view.close();
      }
    }
  }

  /** HashKV at the current revision. */
  hash(): Promise<KvHash> {
    return this.hashKV(0);
  }

  /**
   * The backend's size on disk as last measured, plus the bytes written since and those still buffered. It
   * goes down when LevelDB's compactions (or defragment, or a reclaim) drop deleted data. Drives NOSPACE.
   */
  dbSizeBytes(): number {
    return this.#sizeBytes + Math.max(0, this.#bytesSinceSize) + this.#core.buffer.bytes;
  }

  overQuota(nextWriteBytes: number): boolean {
    return this.dbSizeBytes() + nextWriteBytes > this.#quotaBytes;
  }

  /** Called synchronously after each write that produced a revision, with its events (prevKv included). */
  onWrite(listener: WriteListener): () => void {
    const wrapped: WriteListener = (rev, events) => listener(rev, events);
    this.#core.listeners.add(wrapped);
    return () => void this.#core.listeners.delete(wrapped);
  }

  /** Events with revision in [from, to], in order, prevKv included when still available. */
  readEvents(fromRevision: number, toRevision: number): Event[] {
    const core = this.#core;
    if (fromRevision > 0 && fromRevision <= core.compactRev) throw new MvccError('compacted');
    const log = core.log;
    const events: Event[] = [];
    for (let i = log.lowerBoundMain(fromRevision); i < log.length; i++) {
      const code = log.at(i);
      const main = codeMain(code);
      if (main > toRevision) break;
      const kv = core.values.read(code);
      const event: Event = { type: codeIsTombstone(code) ? EventType.Delete : EventType.Put, kv };
      // etcd reads prevKv at main - 1, unless that is compacted.
      if (main - 1 >= core.compactRev) {
        const ki = core.tree.get(kv.key);
        const prev = ki?.get(main - 1);
        if (prev !== undefined) event.prevKv = core.values.read(prev, ki!.key);
      }
      events.push(event);
    }
    return events;
  }

  /**
   * What the store's retained byte arrays hold against what their backing buffers occupy (index keys,
   * unflushed values, cached values). A kept view into a pooled or shared buffer (a request's decode buffer,
   * msgpackr's pack buffer) shows as backing ≫ bytes. For tests; walks the whole index.
   */
  retainedBytes(): { bytes: number; backing: number } {
    let bytes = 0;
    let backing = 0;
    const count = (b: Uint8Array): void => {
      bytes += b.byteLength;
      backing += b.buffer.byteLength;
    };
    for (const ki of this.#core.tree.all()) count(ki.key);
    for (const b of this.#core.values.retained()) count(b);
    return { bytes, backing };
  }

  /** Keys currently live (for tests and metrics). */
  get keyCount(): number {
    let n = 0;
    for (const ki of this.#core.tree.all()) if (ki.current() !== undefined) n++;
    return n;
  }

  /** Memory held for values: written and not yet flushed (entries), and cached (bytes). For tests and metrics. */
  get valueMemory(): { overlayEntries: number; cacheBytes: number } {
    return { overlayEntries: this.#core.values.overlaySize, cacheBytes: this.#core.values.cacheBytes };
  }

  checkInvariants(): void {
    const core = this.#core;
    core.tree.checkInvariants();
    let prev = -1;
    for (const code of core.log) {
      assert(code > prev, 'revision log order');
      prev = code;
    }
    assert(core.log.length === 0 || codeMain(core.log.at(core.log.length - 1)) <= core.currentRev, 'revision log beyond the current revision');
  }
}
