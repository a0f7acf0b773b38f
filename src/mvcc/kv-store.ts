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
 *
 * Parts: flush-marks.ts (the cuts), backend-queue.ts (the I/O queue and size), physical-compaction.ts
 * (backend deletes and reclaim), state-stream-io.ts (export/import), hash.ts, kv-events.ts, kv-inspect.ts.
 */
import { assert, assertSafeInteger } from '../base/assert.js';
import { quotaBackendBytesDefault, quotaBackendBytesMax, reclaimAtQuotaFraction, reclaimGarbageFraction, valueCacheBytesDefault } from '../base/limits.js';
import { batchOpOverheadBytes, WriteBuffer, type Backend, type BackendView } from './backend.js';
import { BackendQueue } from './backend-queue.js';
import { compactedRevisionOf, compactInMemory, finishedCompactKey, scheduledCompactKey } from './compaction.js';
import { FlushMarks, type FlushMark } from './flush-marks.js';
import { hashStore, type KvHash } from './hash.js';
import { encodeIndexCheckpoint, IndexCheckpointError } from './index-checkpoint.js';
import { loadIndexCheckpoint } from './index-checkpoint-load.js';
import type { KeyIndex } from './key-index.js';
import { decodeKeyValueMeta } from './kv-codec.js';
import type { WriteListenOptions } from './watch-types.js';
import { MvccCore, type WriteListener } from './kv-core.js';
import { readEvents } from './kv-events.js';
import { checkCoreInvariants, liveKeyCount, retainedBytes } from './kv-inspect.js';
import { consistentIndexKey, termKey, u64Bytes, readU64 } from './kv-meta.js';
import { rangeRequest } from './kv-read.js';
import { checkSnapshot, exportView, writeSnapshotInto, type SnapshotExport, type SnapshotSource } from './state-stream-io.js';
import type { LeaseHooks } from './lease-hooks.js';
import { PhysicalCompaction } from './physical-compaction.js';
import { bytesToRevision, revisionToBytes } from './revision.js';
import { codeToBytes, revCode } from './rev-code.js';
import { ValueStore } from './value-store.js';
import { applyDeleteRange, applyPut, applyTxn, checkPut } from './txn.js';
import {
  MvccError, type DeleteRangeRequest, type DeleteRangeResponse, type Event, type PutRequest, type PutResponse,
  type RangeRequest, type RangeResponse, type TxnRequest, type TxnResponse,
} from './types.js';

export type { CheckedSnapshot, SnapshotExport, SnapshotSource } from './state-stream-io.js';

export interface KvStoreOptions {
  /** NOSPACE threshold; 0 or absent: etcd's 2 GiB default; negative: no quota; clamped to 8 GiB. */
  quotaBackendBytes?: number;
  leases?: LeaseHooks;
  /** Bytes of decoded values cached in memory (default valueCacheBytesDefault). */
  valueCacheBytes?: number;
  /** A key index saved at the last clean stop (index-checkpoint.ts), used when it matches the backend. */
  indexCheckpoint?: AsyncIterable<Uint8Array>;
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
  #writtenBytes = 0;
  readonly #marks = new FlushMarks();
  readonly #queue: BackendQueue;
  readonly #physical: PhysicalCompaction;
  #loadedFrom: { checkpoint: boolean; reason?: string } = { checkpoint: false, reason: 'none given' };

  private constructor(backend: Backend, options: KvStoreOptions) {
    this.#backend = backend;
    this.#core = new MvccCore(new WriteBuffer(), new ValueStore(backend, options.valueCacheBytes ?? valueCacheBytesDefault));
    const quota = options.quotaBackendBytes ?? 0;
    this.#quotaBytes = quota === 0 ? quotaBackendBytesDefault : quota < 0 ? Infinity : Math.min(quota, quotaBackendBytesMax);
    this.#queue = new BackendQueue(backend);
    this.#physical = new PhysicalCompaction({
      backend,
      queue: this.#queue,
      flush: () => this.flush(),
      reclaimWorthIt: (dropped) => this.#reclaimWorthIt(dropped),
    });
  }

  /** The consistent index the backend holds (0 when empty): known before the key index is loaded. */
  static async persistedIndex(backend: Backend): Promise<number> {
    const index = await backend.get('meta', consistentIndexKey);
    return index === undefined ? 0 : readU64(index);
  }

  /**
   * Load the store from the backend: the state exactly as of the persisted consistent index. With an index
   * checkpoint that matches the backend (written at the same consistent index and term), the key index comes
   * from it and only revisions after it are scanned; otherwise every revision is scanned (and `loadedFrom`
   * says why the checkpoint was not used).
   */
  static async open(backend: Backend, options: KvStoreOptions = {}): Promise<KvStore> {
    const consistentIndex = await KvStore.persistedIndex(backend);
    const termBytes = await backend.get('meta', termKey);
    const term = termBytes === undefined ? 0 : readU64(termBytes);
    let store = new KvStore(backend, options);
    let afterCode = -1;
    if (options.indexCheckpoint !== undefined) {
      try {
        const compactRev = await compactedRevisionOf(backend);
        afterCode = await loadIndexCheckpoint(store.#core, options.indexCheckpoint, backend, { consistentIndex, term, compactRev });
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
      core.load(code, tombstone, decodeKeyValueMeta(v));
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
        this.#physical.start({ revision: rev, codes, resolve: () => {}, reject: () => {} });
      }
    }
    await this.#queue.measureSize();
    if (options.leases !== undefined) this.setLeaseHooks(options.leases);
  }

  /** How the last open found the key index (a checkpoint, or a scan and why). */
  get loadedFrom(): { checkpoint: boolean; reason?: string } {
    return this.#loadedFrom;
  }

  /**
   * The key index as checkpoint frames (index-checkpoint.ts), for a member that has stopped applying and
   * flushed: everything is in the backend, so the checkpoint is cut at the last revision.
   */
  indexCheckpoint(): Iterable<Uint8Array> {
    const core = this.#core;
    assert(this.#flushedIndex === this.#consistentIndex && core.values.overlaySize === 0, 'index checkpoint of a store with unflushed writes');
    return this.liveIndexCheckpoint();
  }

  /**
   * The key index as checkpoint frames, cut at what is applied now, for a member that keeps applying: pull
   * one frame per turn of the event loop (the keys are walked from where the last frame stopped, as the index
   * is then). Applied writes past the cut are left out (a crash's start scans them), and a start refuses the
   * checkpoint while the backend is behind the cut. Throws IndexCheckpointError when a compaction ran in
   * between (the cut's revisions are no longer what the index holds).
   */
  *liveIndexCheckpoint(keysPerPull = 4096): Generator<Uint8Array> {
    const core = this.#core;
    const compactRev = core.compactRev;
    const header = {
      consistentIndex: this.#consistentIndex, term: this.#term, currentRev: core.currentRev, compactRev,
      lastCode: core.lastCode, keys: core.tree.size,
    };
    const keys = (after: string | undefined): KeyIndex[] => {
      if (core !== this.#core || core.compactRev !== compactRev) throw new IndexCheckpointError('compacted while the checkpoint was written');
      const batch: KeyIndex[] = [];
      core.tree.visit(after === undefined ? '' : `${after}\0`, '', (ki) => batch.push(ki) < keysPerPull);
      return batch;
    };
    yield* encodeIndexCheckpoint(header, keys);
  }

  /**
   * Replace the backend's contents with a state stream (from exportSnapshot), then open the store on it
   * (state-stream-io.ts: the stream is checked whole first unless it is a CheckedSnapshot, and the consistent
   * index is written last).
   */
  static async importSnapshot(backend: Backend, source: SnapshotSource, options: KvStoreOptions = {}): Promise<KvStore> {
    await checkSnapshot(source);
    await backend.clear();
    const store = new KvStore(backend, options);
    const { consistentIndex, term } = await writeSnapshotInto(backend, store.#core, source);
    await store.#finishOpen(consistentIndex, term, options);
    return store;
  }

  get revision(): number {
    return this.#core.currentRev;
  }

  /** Bytes handed to the backend by flushes since this store opened (what a start's scan grows by). */
  get writtenBytes(): number {
    return this.#writtenBytes;
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
    if (index > this.#consistentIndex) this.#marks.markApplied(this.#currentMark());
    this.#consistentIndex = index;
    this.#term = term;
  }

  /** The Raft log is durable up to `index`: flushes may write the effects of entries up to it. */
  setDurableIndex(index: number): void {
    assertSafeInteger(index, 'durable index');
    this.#marks.durableIndex = index;
  }

  #currentMark(): FlushMark {
    const core = this.#core;
    const [index, term] = [this.#consistentIndex, this.#term];
    return { from: index, fromTerm: term, index, term, ops: core.buffer.size, jobs: this.#physical.pending, lastCode: core.lastCode };
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
    core.buffer.put('meta', scheduledCompactKey, revisionToBytes({ main: revision, sub: 0 }));
    return { physicalDone: this.#physical.schedule(revision, codes) };
  }

  /**
   * Write everything applied so far, with the consistent index, in one atomic batch. The buffer is taken
   * synchronously, so apply may continue while the write is in flight; flushes land in call order.
   */
  flush(): Promise<void> {
    const flushable = this.#marks.flushable(this.#consistentIndex, () => this.#currentMark());
    if (flushable === undefined) return this.#queue.tail;
    const { mark, covered } = flushable;
    if (mark.ops === 0 && mark.index <= this.#flushedIndex) return this.#queue.tail;
    assert(mark.index >= this.#flushedIndex, `flush at ${mark.index} behind the flushed index ${this.#flushedIndex}`);
    const ops = this.#core.buffer.take(mark.ops);
    const jobs = this.#physical.take(mark.jobs);
    this.#marks.flushed(mark, covered);
    this.#flushedIndex = mark.index;
    ops.push({ type: 'put', bucket: 'meta', key: consistentIndexKey, value: u64Bytes(mark.index) });
    ops.push({ type: 'put', bucket: 'meta', key: termKey, value: u64Bytes(mark.term) });
    const upTo = mark.lastCode;
    let dataBytes = 0;
    for (const op of ops) dataBytes += op.key.length + (op.type === 'put' ? op.value.length : 0);
    this.#queue.wrote(dataBytes);
    this.#writtenBytes += dataBytes;
    // The backend's size estimate is a native call of its own; refreshing it on every flush showed in
    // profiles. Between refreshes the quota adds the bytes written since, so it never under-counts growth.
    const refreshSize = ++this.#flushes % flushesPerSizeRefresh === 0;
    const done = this.#queue.enqueueBatch(dataBytes + ops.length * batchOpOverheadBytes, async () => {
      await this.#backend.write(ops);
      this.#core.values.flushed(upTo);
      if (refreshSize) await this.#queue.measureSize();
    });
    for (const job of jobs) this.#physical.start(job);
    return done;
  }

  /**
   * Flush everything applied so far (up to the durable index) and make the backend durable (fsync): after
   * this, the Raft log may release the entries the backend holds. Resolves with the index made durable.
   */
  async flushDurable(): Promise<number> {
    const flushed = this.flush();
    const index = this.#flushedIndex;
    // Both awaited: a flush that failed must fail this too, or the index it returns would claim data the
    // backend never got (the queue runs the sync after a failed task all the same).
    await Promise.all([flushed, this.#queue.enqueue(() => this.#backend.write([], { sync: true }))]);
    return index;
  }

  /**
   * Applied state not yet written to the backend, as the memory it holds: the write buffer plus the flush
   * batches queued behind a slow backend. Apply waits while it is over a bound (the driver's applyHold), so a
   * backend that cannot keep up slows the member down instead of growing its memory.
   */
  get backlogBytes(): number {
    return this.#core.buffer.memoryBytes + this.#queue.pendingBytes;
  }

  /** Resolves when all backend work queued so far (flushes, started compactions) is done. */
  async idle(): Promise<void> {
    await this.#physical.settled();
    await this.#queue.tail;
  }

  /**
   * A consistent point-in-time copy of every bucket, streamed from a backend view taken right after
   * everything applied so far is flushed (in the I/O queue, so no later batch is in it).
   */
  async exportSnapshot(): Promise<SnapshotExport> {
    const flushed = this.flush();
    let view: BackendView | undefined;
    const viewed = this.#queue.enqueue(async () => {
      view = this.#backend.view();
    });
    // A failed flush fails the export (its view would lack what was applied), and closes the view.
    const failed = (await Promise.allSettled([flushed, viewed])).find((r) => r.status === 'rejected');
    if (failed !== undefined) {
      await view?.close();
      throw failed.reason;
    }
    return exportView(view!);
  }

  /** etcd's Defragment, serialized with the other backend writes. */
  defragment(): Promise<void> {
    return this.#queue.enqueue(async () => {
      await this.#backend.defragment();
      await this.#queue.measureSize();
    });
  }

  /** Before a write is refused for the quota: have the backend drop what compaction deleted (physical-compaction.ts). */
  reclaim(): Promise<void> {
    return this.#physical.reclaim();
  }

  /** See reclaimAtQuotaFraction: over that share of the quota, with enough dropped since the last reclaim. */
  #reclaimWorthIt(dropped: number): boolean {
    if (dropped === 0 || this.dbSizeBytes() <= this.#quotaBytes * reclaimAtQuotaFraction) return false;
    return dropped >= this.#core.log.length * reclaimGarbageFraction;
  }

  /** etcd's HashKV at `revision` (0: the current one), streamed (hash.ts hashStore). */
  hashKV(revision: number): Promise<KvHash> {
    return hashStore(this.#core, this.#backend, revision);
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
    return this.#queue.sizeBytes + this.#core.buffer.bytes;
  }

  overQuota(nextWriteBytes: number): boolean {
    return this.dbSizeBytes() + nextWriteBytes > this.#quotaBytes;
  }

  /**
   * Called synchronously after each write that produced a revision, with its events; prevKv is included when
   * some listener wants it (options.wantsPrevKv; a listener without the option always does).
   */
  onWrite(listener: WriteListener, options: WriteListenOptions = {}): () => void {
    // Wrapped: the same function subscribed twice is two listeners.
    const wrapped: WriteListener = (rev, events) => listener(rev, events);
    const wantsPrevKv = options.wantsPrevKv;
    this.#core.listeners.set(wrapped, () => wantsPrevKv?.() ?? true);
    return () => void this.#core.listeners.delete(wrapped);
  }

  /** Events with revision in [from, to], in order, prevKv included when still available. */
  readEvents(fromRevision: number, toRevision: number): Event[] {
    return readEvents(this.#core, fromRevision, toRevision);
  }

  /** See kv-inspect.ts. For tests; walks the whole index. */
  retainedBytes(): { bytes: number; backing: number } {
    return retainedBytes(this.#core);
  }

  /** Keys currently live (for tests and metrics). */
  get keyCount(): number {
    return liveKeyCount(this.#core);
  }

  /** Memory held for values: written and not yet flushed (entries), and cached (bytes). For tests and metrics. */
  get valueMemory(): { overlayEntries: number; cacheBytes: number } {
    return { overlayEntries: this.#core.values.overlaySize, cacheBytes: this.#core.values.cacheBytes };
  }

  checkInvariants(): void {
    checkCoreInvariants(this.#core);
  }
}
