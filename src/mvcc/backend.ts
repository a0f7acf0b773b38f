/**
 * The backend port: where the MVCC store, the lessor, alarms and the server's membership persist.
 *
 * Durability comes from the Raft log, not from here: batches are written without sync, and every batch carries
 * the consistent index (the last applied Raft index) atomically with the data, so a restart replays exactly
 * the entries after it (etcd #13766). Two adapters implement this port and pass one conformance suite:
 * MemoryBackend (simulation, tests) and LevelBackend (classic-level, in src/storage/level-backend.ts: src/mvcc itself
 * imports no package).
 */

/** Key spaces, as etcd's bbolt buckets. New buckets go last: a bucket's index is its LevelDB key prefix. */
export type Bucket = 'key' | 'meta' | 'lease' | 'alarm' | 'members' | 'auth' | 'authUsers' | 'authRoles';
export const buckets: readonly Bucket[] = ['key', 'meta', 'lease', 'alarm', 'members', 'auth', 'authUsers', 'authRoles'];

export type BatchOp =
  | { type: 'put'; bucket: Bucket; key: Uint8Array; value: Uint8Array }
  | { type: 'del'; bucket: Bucket; key: Uint8Array };

export interface ScanOptions {
  gte?: Uint8Array;
  lt?: Uint8Array;
}

export interface WriteOptions {
  /**
   * Make this batch and every earlier one durable before resolving (fsync). Only where the Raft log stops
   * covering the data: before a snapshot lets the log release the entries the backend holds.
   */
  sync?: boolean;
}

/** Synchronous point reads: what the store's apply path and reads need (LevelDB's getSync; bbolt's mmap in etcd). */
export interface SyncReader {
  getSync(bucket: Bucket, key: Uint8Array): Uint8Array | undefined;
}

/** A consistent point-in-time view of every bucket (LevelDB's explicit snapshot); close it when done. */
export interface BackendView {
  get(bucket: Bucket, key: Uint8Array): Promise<Uint8Array | undefined>;
  scan(bucket: Bucket, options?: ScanOptions): AsyncIterable<[Uint8Array, Uint8Array]>;
  close(): Promise<void>;
}

export interface Backend extends SyncReader {
  /** Apply all ops atomically (all or none survive a crash), in order. Not synced unless asked. */
  write(ops: BatchOp[], options?: WriteOptions): Promise<void>;
  get(bucket: Bucket, key: Uint8Array): Promise<Uint8Array | undefined>;
  /** Entries of one bucket in ascending unsigned-byte key order. */
  scan(bucket: Bucket, options?: ScanOptions): AsyncIterable<[Uint8Array, Uint8Array]>;
  /** A view of the contents as of this call (synchronous: later writes are not in it). */
  view(): BackendView;
  /** Remove every entry of every bucket (before importing a snapshot). */
  clear(): Promise<void>;
  /** Bytes the backend occupies (etcd_mvcc_db_total_size_in_bytes; drives the NOSPACE quota). */
  sizeBytes(): Promise<number>;
  /** Reclaim space after compaction (etcd's Defragment). */
  defragment(): Promise<void>;
  close(): Promise<void>;
}

/**
 * What one batched op holds beyond its key and value bytes (the op object, its array slot, the byte arrays'
 * headers): counted with them, so a backlog of small puts is not under-counted by half or more.
 */
export const batchOpOverheadBytes = 160;

/**
 * Collects the writes of one or more applied entries; the owner flushes it as one atomic batch. The store,
 * the lessor, alarms and membership all add to the same buffer during apply, so one entry's effects are
 * never half-persisted.
 */
export class WriteBuffer {
  #ops: BatchOp[] = [];
  #bytes = 0;

  put(bucket: Bucket, key: Uint8Array, value: Uint8Array): void {
    this.#ops.push({ type: 'put', bucket, key, value });
    this.#bytes += key.length + value.length;
  }

  del(bucket: Bucket, key: Uint8Array): void {
    this.#ops.push({ type: 'del', bucket, key });
    this.#bytes += key.length;
  }

  get size(): number {
    return this.#ops.length;
  }

  /** Key and value bytes collected so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The memory the collected ops hold, about (key and value bytes plus batchOpOverheadBytes an op). */
  get memoryBytes(): number {
    return this.#bytes + this.#ops.length * batchOpOverheadBytes;
  }

  /** Hand the first `count` collected ops over (all by default), keeping the rest in order. */
  take(count = this.#ops.length): BatchOp[] {
    if (count >= this.#ops.length) {
      const ops = this.#ops;
      this.#ops = [];
      this.#bytes = 0;
      return ops;
    }
    const ops = this.#ops.splice(0, count);
    for (const op of ops) this.#bytes -= op.key.length + (op.type === 'put' ? op.value.length : 0);
    return ops;
  }
}
