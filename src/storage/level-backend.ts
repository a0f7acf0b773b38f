/**
 * The LevelDB Backend adapter (classic-level). Buckets are a 1-byte key prefix (their index in `buckets`),
 * so one atomic LevelDB batch can span buckets. Writes are not synced: the Raft WAL is what makes applied
 * entries durable, and the consistent index in each batch tells a restart where to resume. Iterators read
 * LevelDB's implicit snapshot, so a scan is a point-in-time view.
 * It lives in src/storage, not beside the port in src/mvcc, because src/mvcc imports no package at all.
 */
import { ClassicLevel } from 'classic-level';
import { assert } from '../base/assert.js';
import { buckets, type Backend, type BackendView, type BatchOp, type Bucket, type ScanOptions, type WriteOptions } from '../mvcc/backend.js';

type Db = ClassicLevel<Uint8Array, Uint8Array>;
/**
 * Writes go through a chained batch (db.batch() then put/del per op): the public API, and as cheap as
 * classic-level's private `_batch` hook the adapter used to call. The array form, db.batch(ops), clones every
 * op and runs hooks and events we do not use: 12.9 µs per 1 KB put in batches of 1,000 (a snapshot import)
 * against 4.4 µs for the hook and 4.5 µs chained; 9.4 against 2.4 and 2.0 µs per small put in batches of 100
 * (the apply loop's flushes). bench/level-batch-cost.ts measures the three.
 */
type Snapshot = ReturnType<Db['snapshot']>;

/**
 * LevelDB's memtable size (its default is 4 MiB). Every flush holds the meta bucket's consistent index, so
 * the level-0 tables overlap one another and LevelDB cannot push them down untouched: every 4 flushes it
 * rewrites them into level 1, and level 1 into level 2 once past 10 MB. With 4 MiB memtables each such round
 * rewrote ~22 MB at once, every ~60,000 small puts: a 10,000-put window that caught one wrote 2.9 KiB per
 * 100 B put, one that did not 0.6 KiB (etcd 3.4: 2.2 KiB, steadily). With 1 MiB the rounds are a quarter of
 * the size and four times as frequent: six such windows measured 0.63–0.83 KiB, and 1.46 KiB for the one that
 * compacted the tail a bulk load left (mean 0.83 KiB; 1.0 KiB with 4 MiB). The memtables (one active, one
 * flushing) also hold 6 MiB less memory.
 */
const writeBufferBytes = 1024 * 1024;

/**
 * LevelDB maps every table file it opens (up to 1000 per process) and keeps it mapped while the file is in
 * its table cache, which holds maxOpenFiles − 10 tables. Mapped pages that were read count in the RSS: a
 * snapshot sent to a joining follower reads every table, and with the defaults (1000 files, 2 MiB tables)
 * the leader kept the whole database mapped afterwards (+100 MB at 100,000 × 1 KB, 1.20–1.31× etcd's leader
 * during the catch-up). LevelDB's floor, 74 files, with 1 MiB tables bounds what stays mapped to 64 MiB.
 * The price: once the database has more than 64 tables, a random read of a value that is neither in the
 * value cache nor in a cached table reopens its table (~32 µs instead of ~5 µs per cold get over 100 MB,
 * bench/level-table-cache.ts); scans move through the tables in order and are unaffected.
 */
const tableCacheFiles = 74;
const tableBytesMax = 1024 * 1024;
/**
 * The most one LevelDB compaction of a database of `dbBytes` writes before it deletes its inputs: its output
 * is no larger than its inputs, which LevelDB caps at 25 tables of the target size
 * (kExpandedCompactionByteSizeLimit) and which cannot exceed the database; plus a memtable flush and its new
 * log. The free space a member keeps in reserve for it (the disk watch raises NOSPACE below the reserve).
 */
export function levelCompactionBytesMax(dbBytes: number): number {
  return Math.min(25 * tableBytesMax, dbBytes) + 2 * writeBufferBytes;
}

/** Entries a scan asks LevelDB for at once. */
const scanBatchEntries = 1000;

/** A key never written: a sync with nothing else to write deletes it, which LevelDB logs and fsyncs. */
const syncMarkerKey = new TextEncoder().encode('sync');

function prefixed(bucket: Bucket, key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length + 1);
  out[0] = buckets.indexOf(bucket);
  out.set(key, 1);
  return out;
}

function bucketStart(bucket: Bucket): Uint8Array {
  return new Uint8Array([buckets.indexOf(bucket)]);
}

function bucketEnd(bucket: Bucket): Uint8Array {
  return new Uint8Array([buckets.indexOf(bucket) + 1]);
}

/** classic-level hands out Buffers; the port speaks plain Uint8Array (same memory, no copy). */
function plain(b: Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

export interface LevelBackendOptions {
  /**
   * The bytes the database occupies on disk, measured by the caller (the server sums the files of the
   * directory). Without it, LevelDB's own estimate of its tables (the memtable and its log not counted).
   */
  diskBytes?: () => Promise<number>;
}

export class LevelBackend implements Backend {
  readonly #db: Db;
  readonly #diskBytes: (() => Promise<number>) | undefined;

  /** Keys and values handed to LevelDB in batches: what its log file receives (see writtenBytes). */
  #batchBytes = 0;
  #openReads = 0;
  /** LevelDB's compaction writes at the last look, kept past a close (its stats are gone then). */
  #compactionBytes = 0;

  private constructor(db: Db, options: LevelBackendOptions) {
    this.#db = db;
    this.#diskBytes = options.diskBytes;
  }

  /** Open (creating if needed) the database in `location`, a directory. */
  static async open(location: string, options: LevelBackendOptions = {}): Promise<LevelBackend> {
    const db: Db = new ClassicLevel<Uint8Array, Uint8Array>(location, {
      keyEncoding: 'view',
      valueEncoding: 'view',
      writeBufferSize: writeBufferBytes,
      maxOpenFiles: tableCacheFiles,
      maxFileSize: tableBytesMax,
    });
    await db.open();
    return new LevelBackend(db, options);
  }

  async write(ops: BatchOp[], options: WriteOptions = {}): Promise<void> {
    if (ops.length === 0 && options.sync !== true) return;
    if (ops.length === 0) ops = [{ type: 'del', bucket: 'meta', key: syncMarkerKey }];
    const batch = this.#db.batch();
    let bytes = 0;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      if (op.type === 'put') batch.put(prefixed(op.bucket, op.key), op.value);
      else batch.del(prefixed(op.bucket, op.key));
      bytes += op.key.length + 1 + (op.type === 'put' ? op.value.length : 0);
    }
    this.#batchBytes += bytes;
    await batch.write({ sync: options.sync === true });
  }

  async get(bucket: Bucket, key: Uint8Array): Promise<Uint8Array | undefined> {
    const value = await this.#db.get(prefixed(bucket, key));
    return value === undefined ? undefined : plain(value);
  }

  /** A read from LevelDB's memtable, block cache or files on this thread (no round trip to the pool). */
  getSync(bucket: Bucket, key: Uint8Array): Uint8Array | undefined {
    const value = this.#db.getSync(prefixed(bucket, key));
    return value === undefined ? undefined : plain(value);
  }

  scan(bucket: Bucket, options: ScanOptions = {}): AsyncIterable<[Uint8Array, Uint8Array]> {
    return this.#scan(bucket, options, undefined);
  }

  async *#scan(bucket: Bucket, options: ScanOptions, snapshot: Snapshot | undefined): AsyncIterable<[Uint8Array, Uint8Array]> {
    const gte = options.gte === undefined ? bucketStart(bucket) : prefixed(bucket, options.gte);
    const lt = options.lt === undefined ? bucketEnd(bucket) : prefixed(bucket, options.lt);
    const it = this.#db.iterator({ gte, lt, snapshot });
    // Double-buffered: LevelDB reads the next batch on its thread while the caller works through this one
    // (a restart's key index scan spent half its time waiting for each batch in turn).
    let next = it.nextv(scanBatchEntries);
    // A view's scans read inside the view's transaction; a bare scan is a read transaction of its own.
    if (snapshot === undefined) this.#openReads += 1;
    try {
      for (;;) {
        const batch = await next;
        if (batch.length === 0) return;
        next = it.nextv(scanBatchEntries);
        for (const [k, v] of batch) {
          assert(k[0] === buckets.indexOf(bucket), 'scan left its bucket');
          yield [plain(k.subarray(1)), plain(v)];
        }
      }
    } finally {
      // An iterator closes only once its read in flight is done.
      await next.catch(() => {});
      if (snapshot === undefined) this.#openReads -= 1;
      await it.close();
    }
  }

  /**
   * Read transactions open now (etcd_mvcc_db_open_read_transactions): views (a LevelDB snapshot each, held
   * by a snapshot export, a HashKV or a catch-up) and scans outside a view. Point reads are synchronous and
   * never stay open.
   */
  get openReads(): number {
    return this.#openReads;
  }

  view(): BackendView {
    const snapshot = this.#db.snapshot();
    this.#openReads += 1;
    let closed = false;
    return {
      get: async (bucket, key) => {
        const value = await this.#db.get(prefixed(bucket, key), { snapshot });
        return value === undefined ? undefined : plain(value);
      },
      scan: (bucket, options = {}) => this.#scan(bucket, options, snapshot),
      close: () => {
        if (!closed) this.#openReads -= 1;
        closed = true;
        return snapshot.close();
      },
    };
  }

  /**
   * Removes every entry and gives their space back before returning (issue 32): LevelDB's clear only writes
   * tombstones, so the old backend stayed on the disk through a snapshot's restore and after it, and a
   * follower whose old state filled its disk could never take the snapshot that replaces it. Measured on a
   * tmpfs with incompressible 64 KiB values (scripts/measure-restore-peak.ts): restoring 8 MiB over 64 MiB
   * peaked at 72 MiB and left 72 MiB without the compaction, 68 MiB and then 8 MiB with it.
   */
  async clear(): Promise<void> {
    await this.#db.clear();
    await this.defragment();
  }

  /** The database's size on disk (see LevelBackendOptions.diskBytes); it counts deleted data until compaction drops it. */
  async sizeBytes(): Promise<number> {
    if (this.#diskBytes !== undefined) return this.#diskBytes();
    return this.#db.approximateSize(new Uint8Array([0]), new Uint8Array([buckets.length]));
  }

  /**
   * Bytes this backend wrote to its files so far (flash wear, main/wear-watch.ts): the batches' keys and
   * values, which LevelDB appends to its log, plus what its compactions wrote (memtable flushes to level 0
   * and merges between levels, its `leveldb.stats` Write(MB) column, whole MiB). LevelDB's record headers
   * and the file system's own writes are not counted: /proc/self/io's write_bytes is the cross-check.
   */
  writtenBytes(): number {
    if (this.#db.status === 'open') this.#compactionBytes = Math.max(this.#compactionBytes, compactionWrittenBytes(this.#db.getProperty('leveldb.stats')));
    return this.#batchBytes + this.#compactionBytes;
  }

  /** Compact the whole key space, dropping deleted entries and rewriting the files (etcd's Defragment). */
  async defragment(): Promise<void> {
    await this.#db.compactRange(new Uint8Array([0]), new Uint8Array([buckets.length]));
  }

  async close(): Promise<void> {
    await this.#db.close();
  }
}

/**
 * The sum of the Write(MB) column of LevelDB's `leveldb.stats`, in bytes:
 *
 *                                Compactions
 *   Level  Files Size(MB) Time(sec) Read(MB) Write(MB)
 *   --------------------------------------------------
 *     0        2        1         0        0         3
 *     1        5        4         0        6         5     → (3 + 5) MiB
 */
export function compactionWrittenBytes(stats: string): number {
  let mib = 0;
  for (const line of stats.split('\n')) {
    const cells = line.trim().split(/\s+/);
    if (cells.length === 6 && cells.every((c) => /^\d+$/.test(c))) mib += Number(cells[5]);
  }
  return mib * 1024 * 1024;
}
