/**
 * The MVCC key-value store: etcd's KV semantics over an in-memory index, written behind to a Backend.
 *
 * Reads and apply are synchronous and never touch the backend. Every change goes to the shared WriteBuffer;
 * `flush()` takes the buffer synchronously and writes it with the consistent index in one atomic batch, so
 * a restart loads exactly the state at the persisted consistent index and Raft replays the rest (W12).
 * All backend I/O (flushes, physical compaction chunks, snapshot export, defragment) runs through one FIFO
 * queue, which keeps batches in order and makes an export a consistent point-in-time copy.
 */
import { assert, assertSafeInteger } from '../base/assert.js';
import { compactionBatchKeysMax, quotaBackendBytesDefault, quotaBackendBytesMax } from '../base/limits.js';
import { buckets, WriteBuffer, type Backend, type BatchOp } from './backend.js';
import { chunked, compactInMemory, finishedCompactKey, scheduledCompactKey } from './compaction.js';
import { hashKV, type KvHash } from './hash.js';
import { decodeKeyValue } from './kv-codec.js';
import { MvccCore, tombstoneKv, type WriteListener } from './kv-core.js';
import { rangeRequest } from './kv-read.js';
import type { LeaseHooks } from './lease-hooks.js';
import { bytesToRevision, revisionToBytes } from './revision.js';
import { parseSnapshot, SnapshotWriter } from './snapshot.js';
import { applyDeleteRange, applyPut, applyTxn, checkPut } from './txn.js';
import {
  MvccError, type DeleteRangeRequest, type DeleteRangeResponse, type Event, type PutRequest, type PutResponse,
  type RangeRequest, type RangeResponse, type TxnRequest, type TxnResponse,
} from './types.js';

export interface KvStoreOptions {
  /** NOSPACE threshold; 0 or absent: etcd's 2 GiB default; negative: no quota; clamped to 8 GiB. */
  quotaBackendBytes?: number;
  leases?: LeaseHooks;
}

const consistentIndexKey = new TextEncoder().encode('consistent_index');

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
  keys: Uint8Array[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Flushes between two refreshes of the backend's size estimate. */
export const flushesPerSizeRefresh = 16;

export class KvStore {
  readonly #backend: Backend;
  #flushes = 0;
  readonly #core: MvccCore;
  readonly #quotaBytes: number;
  #consistentIndex = 0;
  #flushedIndex = -1;
  #io: Promise<void> = Promise.resolve();
  /** Compactions whose schedule is still in the buffer: their deletes start after the next flush. */
  #pendingJobs: PhysicalJob[] = [];
  #sizeBytes = 0;
  readonly #runningJobs = new Set<Promise<void>>();

  private constructor(backend: Backend, options: KvStoreOptions) {
    this.#backend = backend;
    this.#core = new MvccCore(new WriteBuffer());
    const quota = options.quotaBackendBytes ?? 0;
    this.#quotaBytes = quota === 0 ? quotaBackendBytesDefault : quota < 0 ? Infinity : Math.min(quota, quotaBackendBytesMax);
  }

  /** Load the store from the backend: the state exactly as of the persisted consistent index. */
  static async open(backend: Backend, options: KvStoreOptions = {}): Promise<KvStore> {
    const store = new KvStore(backend, options);
    const core = store.#core;
    for await (const [k, v] of backend.scan('key')) {
      const { rev, tombstone } = bytesToRevision(k);
      const kv = decodeKeyValue(v);
      core.load({ main: rev.main, sub: rev.sub, tombstone, kv: tombstone ? tombstoneKv(kv.key, rev.main) : kv }, k.length + v.length);
    }
    const index = await backend.get('meta', consistentIndexKey);
    store.#consistentIndex = index === undefined ? 0 : readU64(index);
    store.#flushedIndex = store.#consistentIndex;
    const scheduled = await backend.get('meta', scheduledCompactKey);
    if (scheduled !== undefined) {
      const rev = bytesToRevision(scheduled).rev.main;
      const keys = compactInMemory(core, rev);
      // etcd: a compaction may have removed every entry up to it; the revision never goes back.
      if (core.currentRev < rev) core.currentRev = rev;
      const finished = await backend.get('meta', finishedCompactKey);
      if (keys.length > 0 || finished === undefined || bytesToRevision(finished).rev.main !== rev) {
        store.#startPhysical({ revision: rev, keys, resolve: () => {}, reject: () => {} });
      }
    }
    store.#sizeBytes = await backend.sizeBytes();
    if (options.leases !== undefined) store.setLeaseHooks(options.leases);
    return store;
  }

  /** Replace the backend's contents with a snapshot (from exportSnapshot), then open the store on it. */
  static async importSnapshot(backend: Backend, data: Uint8Array, options: KvStoreOptions = {}): Promise<KvStore> {
    const puts = parseSnapshot(data);
    const ops: BatchOp[] = [];
    for (const bucket of buckets) for await (const [key] of backend.scan(bucket)) ops.push({ type: 'del', bucket, key });
    await backend.write(ops.concat(puts));
    return KvStore.open(backend, options);
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
      const e = ki.current();
      if (e !== undefined && e.kv.lease !== 0n) hooks.attach(e.kv.lease, ki.key);
    }
  }

  setConsistentIndex(index: number): void {
    assertSafeInteger(index, 'consistent index');
    assert(index >= this.#consistentIndex, `consistent index went back from ${this.#consistentIndex} to ${index}`);
    this.#consistentIndex = index;
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
    const keys = compactInMemory(core, revision);
    core.buffer.put('meta', scheduledCompactKey, revisionToBytes({ main: revision, sub: 0 }));
    let job!: PhysicalJob;
    const physicalDone = new Promise<void>((resolve, reject) => {
      job = { revision, keys, resolve, reject };
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
      for (const chunk of chunked(job.keys, compactionBatchKeysMax)) {
        await this.#enqueue(() => this.#backend.write(chunk.map((key) => ({ type: 'del', bucket: 'key', key }))));
      }
      const finished = revisionToBytes({ main: job.revision, sub: 0 });
      await this.#enqueue(() => this.#backend.write([{ type: 'put', bucket: 'meta', key: finishedCompactKey, value: finished }]));
      job.resolve();
    } catch (err) {
      job.reject(err);
    }
  }

  /**
   * Write everything applied so far, with the consistent index, in one atomic batch. The buffer is taken
   * synchronously, so apply may continue while the write is in flight; flushes land in call order.
   */
  flush(): Promise<void> {
    const ops = this.#core.buffer.take();
    if (ops.length === 0 && this.#consistentIndex === this.#flushedIndex) return this.#io;
    this.#flushedIndex = this.#consistentIndex;
    ops.push({ type: 'put', bucket: 'meta', key: consistentIndexKey, value: u64Bytes(this.#consistentIndex) });
    const jobs = this.#pendingJobs.splice(0);
    // The backend's size estimate is a native call of its own; refreshing it on every flush showed in
    // profiles. The quota check uses max(estimate, stored KV bytes), so a slightly stale estimate is safe.
    const refreshSize = ++this.#flushes % flushesPerSizeRefresh === 0;
    const done = this.#enqueue(async () => {
      await this.#backend.write(ops);
      if (refreshSize) this.#sizeBytes = await this.#backend.sizeBytes();
    });
    for (const job of jobs) this.#startPhysical(job);
    return done;
  }

  /** Resolves when all backend work queued so far (flushes, started compactions) is done. */
  async idle(): Promise<void> {
    while (this.#runningJobs.size > 0) await Promise.all([...this.#runningJobs]);
    await this.#io;
  }

  /** A consistent point-in-time copy of every bucket at the current consistent index. */
  async exportSnapshot(): Promise<Uint8Array> {
    void this.flush();
    let data!: Uint8Array;
    await this.#enqueue(async () => {
      const writer = new SnapshotWriter();
      for (const bucket of buckets) for await (const [k, v] of this.#backend.scan(bucket)) writer.add(bucket, k, v);
      data = writer.finish();
    });
    return data;
  }

  /** etcd's Defragment, serialized with the other backend writes. */
  defragment(): Promise<void> {
    return this.#enqueue(async () => {
      await this.#backend.defragment();
      this.#sizeBytes = await this.#backend.sizeBytes();
    });
  }

  hashKV(revision: number): KvHash {
    return hashKV(this.#core, revision);
  }

  /** HashKV at the current revision. */
  hash(): KvHash {
    return hashKV(this.#core, 0);
  }

  /**
   * The backend size as of the last flush, or the stored KV bytes if larger (LevelDB's estimate lags
   * behind its memtable). Drives the NOSPACE alarm.
   */
  dbSizeBytes(): number {
    return Math.max(this.#sizeBytes, this.#core.historyBytes);
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
    const history = core.history;
    let lo = 0;
    let hi = history.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (history[mid]!.main < fromRevision) lo = mid + 1;
      else hi = mid;
    }
    const events: Event[] = [];
    for (let i = lo; i < history.length && history[i]!.main <= toRevision; i++) {
      const e = history[i]!;
      const event: Event = { type: e.tombstone ? 1 : 0, kv: e.kv };
      // etcd reads prevKv at main - 1, unless that is compacted.
      if (e.main - 1 >= core.compactRev) {
        const prev = core.tree.get(e.kv.key)?.get(e.main - 1);
        if (prev !== undefined) event.prevKv = prev.kv;
      }
      events.push(event);
    }
    return events;
  }

  /** Keys currently live (for tests and metrics). */
  get keyCount(): number {
    let n = 0;
    for (const ki of this.#core.tree.all()) if (ki.current() !== undefined) n++;
    return n;
  }

  checkInvariants(): void {
    this.#core.tree.checkInvariants();
    const h = this.#core.history;
    for (let i = 1; i < h.length; i++) {
      assert(h[i - 1]!.main < h[i]!.main || (h[i - 1]!.main === h[i]!.main && h[i - 1]!.sub < h[i]!.sub), 'history order');
    }
    assert(h.length === 0 || h[h.length - 1]!.main <= this.#core.currentRev, 'history beyond current revision');
  }
}
