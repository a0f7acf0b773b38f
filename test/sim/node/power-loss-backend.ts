/**
 * The store's backend as LevelDB keeps it across a power loss: a batch written without sync sits in LevelDB's
 * log in the page cache, so a crash of the machine keeps some prefix of the batches written since the last
 * synced write (the log is replayed up to its first incomplete record) and loses the rest; a synced write
 * makes it and everything before it durable. The store must never need a lost batch: it writes only what the
 * Raft log already holds durably, and lets the log go only after a synced write (flushDurable).
 */
import type { Backend, BackendView, BatchOp, Bucket, ScanOptions, WriteOptions } from '../../../src/mvcc/backend.js';
import { MemoryBackend } from '../../../src/mvcc/memory-backend.js';

type Unsynced = { ops: BatchOp[] } | 'clear';

/** A record's overhead in LevelDB's log and tables (sequence, lengths, block trailers), roughly. */
const recordOverheadBytes = 24;

/** LevelDB compacts at most 25 tables (kExpandedCompactionByteSizeLimit; 1 MiB tables here) per step. */
const compactionStepBytesMax = 25 * 1024 * 1024;

/** The bytes a batch adds to LevelDB's files: every put and every delete (a tombstone) is appended. */
function batchDiskBytes(ops: BatchOp[]): number {
  let n = 0;
  for (const op of ops) n += op.key.length + (op.type === 'put' ? op.value.length : 0) + recordOverheadBytes;
  return n;
}

export class PowerLossBackend implements Backend {
  #live = new MemoryBackend();
  /** The contents as of the last synced write. */
  #synced = new MemoryBackend();
  #unsynced: Unsynced[] = [];
  /** Batches lost to power losses so far. */
  lostBatches = 0;
  /**
   * The bytes LevelDB's files take on the disk (issue 32): each batch appends, and only a defragment (a full
   * compaction) brings them back to what is live. A disk of a capacity counts them (server-node.ts).
   */
  diskBytes = 0;
  /** Whether the disk has room for `bytes` more (absent: no capacity); a write without room fails with ENOSPC. */
  room: ((bytes: number) => boolean) | undefined;
  /**
   * A restore is under way (writes since a clear, until a synced write makes them durable): LevelDB holds
   * what it restores twice at peak, 2·S for a snapshot of S (measured on tmpfs by
   * scripts/measure-restore-peak.ts), and gives the second copy back once it is durable.
   */
  #restoring = false;
  /** The second copy of a restore's writes (counted in diskBytes until the restore is durable). */
  #restoreCopyBytes = 0;

  write(ops: BatchOp[], options?: WriteOptions): Promise<void> {
    const bytes = batchDiskBytes(ops);
    const copy = this.#restoring ? bytes : 0;
    if (this.room !== undefined && !this.room(bytes + copy)) {
      return Promise.reject(Object.assign(new Error('IO error: ENOSPC: no space left on device (simulated backend)'), { code: 'ENOSPC' }));
    }
    this.diskBytes += bytes + copy;
    this.#restoreCopyBytes += copy;
    if (options?.sync === true) this.#restored();
    // Recorded as the live backend applies it (synchronously, inside write), in call order.
    const done = this.#live.write(ops, options);
    this.#unsynced.push({ ops: ops.map((op) => (op.type === 'put' ? { ...op, key: op.key.slice(), value: op.value.slice() } : { ...op, key: op.key.slice() })) });
    if (options?.sync === true) this.#sync();
    return done;
  }

  clear(): Promise<void> {
    this.diskBytes = 0;
    this.#restoreCopyBytes = 0;
    this.#restoring = true;
    const done = this.#live.clear();
    this.#unsynced.push('clear');
    return done;
  }

  /** The restore is durable: LevelDB's second copy of it is gone. */
  #restored(): void {
    this.diskBytes -= this.#restoreCopyBytes;
    this.#restoreCopyBytes = 0;
    this.#restoring = false;
  }

  #sync(): void {
    for (const u of this.#unsynced) void (u === 'clear' ? this.#synced.clear() : this.#synced.write(u.ops));
    this.#unsynced = [];
  }

  /** The machine lost power: the first `keep` unsynced batches survive (clamped), the rest are gone. */
  powerLoss(keep: number): void {
    const kept = this.#unsynced.slice(0, Math.max(0, keep));
    this.lostBatches += this.#unsynced.length - kept.length;
    this.#unsynced = kept;
    this.#sync();
    this.#live = this.#synced.clone();
    this.#restored(); // reopened, LevelDB replays its log into a table and deletes the log
  }

  get unsyncedBatches(): number {
    return this.#unsynced.length;
  }

  get(bucket: Bucket, key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.#live.get(bucket, key);
  }

  getSync(bucket: Bucket, key: Uint8Array): Uint8Array | undefined {
    return this.#live.getSync(bucket, key);
  }

  scan(bucket: Bucket, options?: ScanOptions): AsyncIterable<[Uint8Array, Uint8Array]> {
    return this.#live.scan(bucket, options);
  }

  view(): BackendView {
    return this.#live.view();
  }

  sizeBytes(): Promise<number> {
    return this.#live.sizeBytes();
  }

  async defragment(): Promise<void> {
    // A full compaction writes the live data anew, one step of at most compactionStepBytesMax at a time, each
    // step's output before it deletes that step's inputs.
    const live = await this.#live.sizeBytes();
    if (this.room !== undefined && !this.room(Math.min(live, compactionStepBytesMax))) throw Object.assign(new Error('IO error: ENOSPC: no space left on device (simulated defragment)'), { code: 'ENOSPC' });
    await this.#live.defragment();
    this.#restored();
    this.diskBytes = await this.#live.sizeBytes();
  }

  async close(): Promise<void> {
    // The "disk" outlives each incarnation: a closed store's backend is opened again by the next one.
  }
}
