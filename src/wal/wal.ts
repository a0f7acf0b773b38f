/**
 * The durable Raft log.
 *
 * ```ts
 * const { wal, state } = await Wal.open(dir, { profile: 'auto', logger, onFatal });
 * // state: { hardState, snapshot (meta), entries (after snapshot.index), loadSnapshot() }: RaftBootstrap-shaped.
 * await wal.save({ hardState, entries, snapshotMeta }); // resolves once durable (one Ready's worth)
 * await wal.saveSnapshot(snapshot);   // data file (temp, fsync, rename, dir fsync), then its meta record
 * await wal.loadSnapshot();           // the snapshot file of the latest durable snapshot meta, if any
 * await wal.releaseTo(index);         // delete whole segments ≤ index; a durable snapshot must cover index
 * wal.metrics; await wal.close();
 * ```
 *
 * Contract:
 * - Saves are durable in call order, and a later save's promise never resolves before an earlier one's.
 *   `entries` may start at or below the last saved index: the suffix from there is replaced (never at or
 *   below the saved commit index: that would lose committed entries, an assertion).
 * - Group commit: saves that arrive while a batch is being written and synced form the next batch; each
 *   batch is one write(2) then one fdatasync(2), capped at the profile's batchBytesMax. At low load a save
 *   waits for exactly one sync. With a commit delay, a batch waits at most that long for the writers
 *   of the last sync to be back beside those queued behind it (SaveQueue#batchFull). Callers must not mutate entries they passed until the save
 *   resolves.
 * - A failed write, sync, rename or preallocation is fatal (W7): every pending and later save rejects with
 *   the same WalFatalError, `onFatal` is called once, nothing is retried or acknowledged. The server exits.
 * - The data directory is locked while open (lock.ts): a second open fails with WalLockedError.
 * - Hard state and snapshot metadata are records in the log (the last valid one wins), not separate files:
 *   the log is already crash-safe (CRC + fdatasync + torn-tail rules), a record costs no extra sync, and they
 *   become durable atomically with the entries of the same batch. Each new segment starts with both, so old
 *   segments can be deleted.
 */
import { assert, assertSafeInteger, type Clock } from '../base/index.js';
import type { Entry, HardState, Snapshot, SnapshotMeta } from '../raft/types.js';
import { BatchEncoding } from './batch-encoding.js';
import { WalClosedError, WalFatalError, WalLockedError } from './errors.js';
import { NodeFsPort, type DirLock, type FsPort } from './fs-port.js';
import { Histogram, recordsPerBatchBounds, syncSecondsBounds, type WalMetrics } from './metrics.js';
import { ProfileCalibration, type Recalibration } from './profile-calibration.js';
import { chooseProfile } from './profile-choice.js';
import { writeProfileMemo } from './profile-memo.js';
import { profiles, validateTuning, type ProfileChoice, type ProfileName, type WalTuning } from './profiles.js';
import { recover, scanLog } from './recover.js';
import { liveLockHolder } from './lock.js';
import { emptySnapshotMeta } from './replay.js';
import { SaveQueue, type PendingSave, type WindowTimer } from './save-queue.js';
import { bytesBound, SaveValidator, type SaveRequest } from './save-request.js';
import { SegmentLog } from './segment-log.js';
import { loadSnapshotFile, removeOldSnapshotFiles, writeSnapshotFile } from './snapshot-file.js';

export type { SaveRequest } from './save-request.js';

export interface WalOptions {
  profile?: ProfileChoice;
  logger?: (line: string) => void;
  /** Called once when the WAL fails; the server should log and exit non-zero. */
  onFatal?: (err: WalFatalError) => void;
  /** File system port (default: the real one). Tests pass the simulated FS. */
  fs?: FsPort;
  /** Overrides of the chosen profile's knobs (tests, benchmarks). */
  tuning?: Partial<WalTuning>;
  /** An index the state machine already applied (the backend's consistent index): the log must reach it. */
  appliedIndex?: number;
  /** The commit-delay window's timer (default Node's; the simulator passes its scheduler, so a seed replays). */
  timer?: WindowTimer;
  /** Times fdatasyncs, for the metrics and `auto`'s probe and calibration (default performance.now). */
  clock?: Clock;
}

const performanceClock: Clock = { nowMs: () => performance.now() };

export interface WalState {
  hardState: HardState;
  snapshot: SnapshotMeta;
  entries: Entry[];
  loadSnapshot(): Promise<Snapshot | undefined>;
}

interface WalInit {
  fs: FsPort;
  dir: string;
  lock: DirLock;
  tuning: WalTuning;
  profile: ProfileName;
  measuredSyncLatencyMs: number | undefined;
  /** `auto`: keep calibrating the profile from the log's own syncs. */
  calibrate: boolean;
  options: WalOptions;
}

export class Wal {
  readonly #fs: FsPort;
  readonly #dir: string;
  readonly #lock: DirLock;
  readonly #options: WalOptions;
  #segments!: SegmentLog;
  readonly #queue: SaveQueue;
  #encoding!: BatchEncoding;
  #inFlight: PendingSave[] = [];
  /**
   * The drain loop runs (#drain). A flag, not the promise's presence: #drain can finish before it returns
   * (an inline write that throws awaits nothing), and `#draining ??= #drain()` would then keep a settled
   * promise that close() awaits forever.
   */
  #drainRunning = false;
  /** The running drain's promise (close waits on it); stale while #drainRunning is false. */
  #draining: Promise<void> = Promise.resolve();
  #failure: WalFatalError | undefined;
  #closed = false;
  #batchSeq = 0;
  /** Records and bytes of the batch being written, counted once it is synced. */
  #batchRecords = 0;
  #batchBytes = 0;
  /** The step in progress, named in the WalFatalError if it fails. */
  #operation = 'write';
  #releaseChain: Promise<unknown> = Promise.resolve();
  // What the caller has handed us (validation), what is encoded (#encoding), what is durable.
  #accepted = new SaveValidator({ last: 0, snapshotIndex: 0, commit: 0, term: 0 });
  #saveSeq = 0;
  /**
   * The promise of the newest queued save, as returned to its caller: what a deferred save waits for. Not a
   * caught copy per save (issue 34: a promise per put); a deferred save attaches both handlers itself.
   */
  #tail: Promise<void> = Promise.resolve();
  #durableSnapshot: SnapshotMeta = emptySnapshotMeta();
  readonly #syncSeconds = new Histogram(syncSecondsBounds);
  readonly #recordsPerBatch = new Histogram(recordsPerBatchBounds);
  readonly #counters = { syncs: 0, bytesWritten: 0, batches: 0, records: 0, saves: 0 };
  readonly #clock: Clock;
  #profile: ProfileName;
  #measuredSyncLatencyMs: number | undefined;
  /** Only for a profile `auto` chose; undefined for one the operator gave. */
  readonly #calibration: ProfileCalibration | undefined;
  #recalibrations = 0;
  /** The memo rewrites of recalibrations, in order; close waits for them. */
  #memoChain: Promise<void> = Promise.resolve();

  /** Use Wal.open. */
  private constructor(init: WalInit) {
    this.#fs = init.fs;
    this.#dir = init.dir;
    this.#lock = init.lock;
    this.#options = init.options;
    this.#profile = init.profile;
    this.#measuredSyncLatencyMs = init.measuredSyncLatencyMs;
    this.#clock = init.options.clock ?? performanceClock;
    this.#calibration = init.calibrate ? new ProfileCalibration(init.profile) : undefined;
    this.#queue = new SaveQueue(init.tuning, init.options.timer);
  }

  static async open(dir: string, options: WalOptions = {}): Promise<{ wal: Wal; state: WalState }> {
    const fs = options.fs ?? new NodeFsPort();
    const log = options.logger ?? (() => {});
    await fs.mkdirp(dir);
    const lock = await fs.lock(dir);
    try {
      const recovered = await recover(fs, dir, log, options.appliedIndex ?? 0);
      const clock = options.clock ?? performanceClock;
      const { profile, measured, tuning, memo, calibrate } = await chooseProfile(fs, dir, options, () => clock.nowMs());
      validateTuning(tuning);
      const detail = measured === undefined ? 'chosen' : `auto: median fdatasync ${measured.toFixed(2)} ms${memo === 'remembered' ? ', remembered' : ''}`;
      log(`wal: ${dir}: profile ${profile} (${detail}), segment ${tuning.segmentBytes} B, batch ≤ ${tuning.batchBytesMax} B, commit delay ${tuning.commitDelayMs} ms`);
      const wal = new Wal({ fs, dir, lock, tuning, profile, measuredSyncLatencyMs: measured, calibrate, options });
      const { replay } = recovered;
      const activeBytes = recovered.active === undefined ? 0 : await recovered.active.size();
      wal.#segments = new SegmentLog(fs, dir, tuning, { ...recovered, activeBytes }, (err) => wal.#fail('segment preparation', err), log);
      if (recovered.active === undefined) await wal.#segments.createFirst(replay.snapshot.index + 1);
      wal.#batchSeq = ((recovered.lastBatchSeq ?? -1) + 1) >>> 0;
      const last = replay.snapshot.index + replay.entries.length;
      wal.#accepted = new SaveValidator({ last, snapshotIndex: replay.snapshot.index, commit: replay.hardState.commit, term: replay.hardState.term });
      wal.#encoding = new BatchEncoding({ hardState: replay.hardState, snapshot: replay.snapshot, last });
      wal.#durableSnapshot = replay.snapshot;
      const { hardState, snapshot, entries } = replay;
      const state: WalState = { hardState, snapshot, entries, loadSnapshot: () => wal.loadSnapshot() };
      return { wal, state };
    } catch (err) {
      await lock.release();
      throw err;
    }
  }

  /**
   * Checks the log in `dir` as open() would and modifies nothing (no lock file, no temp file removed, no torn
   * tail cleared): rejects with the WalLockedError or WalCorruptError open() would meet. A missing directory
   * is an empty log. Resolves with the log's latest snapshot (empty for lockOnly or no log), so that a start
   * can refuse a backend behind it before opening anything (main/start-checks.ts).
   */
  static async check(dir: string, options: { fs?: FsPort; appliedIndex?: number; lockOnly?: boolean } = {}): Promise<{ snapshot: SnapshotMeta }> {
    const fs = options.fs ?? new NodeFsPort();
    const held = await liveLockHolder(dir);
    if (held !== undefined) throw new WalLockedError(dir, held);
    if (options.lockOnly === true) return { snapshot: emptySnapshotMeta() };
    const exists = await fs.list(dir).then(() => true, () => false);
    if (!exists) return { snapshot: emptySnapshotMeta() };
    const scanned = await scanLog(fs, dir, options.appliedIndex ?? 0);
    return { snapshot: scanned.replay.snapshot };
  }

  /** The data of the snapshot file for `meta` in the log at `dir`, read without opening the log; undefined when absent. */
  static async peekSnapshot(dir: string, meta: SnapshotMeta, fs: FsPort = new NodeFsPort()): Promise<Snapshot | undefined> {
    return loadSnapshotFile(fs, dir, meta);
  }

  get profile(): ProfileName {
    return this.#profile;
  }

  save(request: SaveRequest): Promise<void> {
    return this.#enqueue(request, undefined);
  }

  saveSnapshot(snapshot: Snapshot): Promise<void> {
    if (this.#failure || this.#closed) return this.#enqueue({}, undefined);
    assert(snapshot.meta.index >= this.#accepted.snapshotIndex, 'snapshot older than the current one');
    const ready = writeSnapshotFile(this.#fs, this.#dir, snapshot).then(() => undefined);
    ready.catch((err: unknown) => this.#fail('snapshot file write', err));
    return this.#enqueue({ snapshotMeta: snapshot.meta }, ready).then(() =>
      removeOldSnapshotFiles(this.#fs, this.#dir, () => this.#durableSnapshot.index, this.#options.logger),
    );
  }

  loadSnapshot(): Promise<Snapshot | undefined> {
    return loadSnapshotFile(this.#fs, this.#dir, this.#durableSnapshot);
  }

  /** Deletes whole segments whose entries are all ≤ index. A durable snapshot must cover index (W11). */
  releaseTo(index: number): Promise<void> {
    assertSafeInteger(index, 'release index');
    assert(index <= this.#durableSnapshot.index, `release to ${index} beyond the durable snapshot at ${this.#durableSnapshot.index}`);
    if (this.#failure) return Promise.reject(this.#failure);
    const run = this.#releaseChain.then(async () => {
      try {
        await this.#segments.release(index);
      } catch (err) {
        this.#fail('segment release', err);
        throw this.#failure;
      }
    });
    this.#releaseChain = run.catch(() => undefined);
    return run;
  }

  get metrics(): WalMetrics {
    return {
      profile: this.#profile,
      measuredSyncLatencyMs: this.#measuredSyncLatencyMs,
      profileRecalibrations: this.#recalibrations,
      ...this.#counters,
      syncSeconds: this.#syncSeconds.snapshot(),
      recordsPerBatch: this.#recordsPerBatch.snapshot(),
      preallocatedBytes: this.#segments.preallocatedBytes,
      segmentsCreated: this.#segments.segmentsCreated,
      segmentsReleased: this.#segments.segmentsReleased,
      segmentsRecycled: this.#segments.segmentsRecycled,
    };
  }

  /** Resolves when the next segment has been preallocated in the background (benchmarks, tests). */
  whenPrepared(): Promise<void> {
    return this.#segments.whenPrepared();
  }

  /** Waits for pending saves, then closes files and releases the directory lock. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    while (this.#drainRunning) await this.#draining;
    await this.#releaseChain;
    await this.#memoChain;
    await this.#segments.close().catch(() => undefined);
    await this.#lock.release();
  }

  #enqueue(request: SaveRequest, ready: Promise<void> | undefined): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new WalClosedError());
    this.#accepted.accept(request);
    const seq = ++this.#saveSeq;
    const deferrable = request.sync === false && (request.entries?.length ?? 0) === 0 && !request.snapshotMeta && !ready;
    if (deferrable) {
      if (request.hardState) this.#encoding.defer(request.hardState, seq);
      // A failed save failed the log first (#fail), so either way the answer is the log's failure.
      return this.#tail.then(
        () => {
          if (this.#failure) throw this.#failure;
        },
        (err: unknown) => {
          throw this.#failure ?? err;
        },
      );
    }
    const saved = new Promise<void>((resolve, reject) => {
      const bound = bytesBound(request);
      const units = Math.max(1, request.entries?.length ?? 0);
      this.#queue.push({ request, seq, bytesBound: bound, units, ready, resolve, reject });
      if (!this.#drainRunning) this.#draining = this.#drain();
    });
    this.#tail = saved;
    return saved;
  }

  async #drain(): Promise<void> {
    this.#drainRunning = true;
    try {
      while (this.#queue.length > 0 && !this.#failure) {
        const head = this.#queue.head!;
        if (head.ready) {
          this.#operation = 'snapshot file write';
          await head.ready;
          head.ready = undefined;
        }
        const filling = this.#queue.waitToFill();
        if (filling !== undefined) await filling;
        // A failure while we waited (a snapshot file, a segment being prepared) ends the log: write nothing.
        if (this.#failure || this.#queue.length === 0) break;
        this.#inFlight = this.#queue.takeBatch();
        // Only what waits on I/O is awaited (issue 34): an inline write is done when #writeBatch returns.
        const written = this.#writeBatch(this.#inFlight);
        if (written !== undefined) await written;
        this.#operation = 'fdatasync';
        const start = this.#clock.nowMs();
        await this.#segments.datasync();
        this.#batchSynced(start);
        this.#queue.batchDurable();
        for (const s of this.#inFlight) {
          if (s.request.snapshotMeta) this.#durableSnapshot = s.request.snapshotMeta;
          s.resolve();
        }
        this.#inFlight = [];
      }
    } catch (err) {
      this.#fail(this.#operation, err);
    } finally {
      this.#drainRunning = false;
    }
  }

  /**
   * Encodes and writes one batch, rotating first when it does not fit; undefined when all of it was done at
   * once (no rotation, an inline write), else resolves once written. The sync is the caller's.
   */
  #writeBatch(batch: PendingSave[]): Promise<void> | undefined {
    assert(batch.length > 0, 'empty batch');
    let bound = 0;
    for (const s of batch) bound += s.bytesBound;
    this.#operation = 'segment rotation';
    if (!this.#segments.needsRotation(bound)) return this.#encodeAndWrite(batch, false);
    return this.#segments.rotate(this.#encoding.writtenLast + 1).then(() => this.#encodeAndWrite(batch, true));
  }

  #encodeAndWrite(batch: PendingSave[], rotated: boolean): Promise<void> | undefined {
    const { bytes, records, maxIndex } = this.#encoding.encode(batch, { batchSeq: this.#batchSeq, salt: this.#segments.salt, rotated });
    this.#batchRecords = records;
    this.#batchBytes = bytes.length;
    this.#operation = 'write';
    return this.#segments.write(bytes, maxIndex);
  }

  /** Counts the batch just written and synced (its sync started at `startMs`), and calibrates on it. */
  #batchSynced(startMs: number): void {
    const syncMs = this.#clock.nowMs() - startMs;
    this.#syncSeconds.observe(syncMs / 1000);
    const recalibration = this.#calibration?.observe(syncMs, this.#batchBytes);
    if (recalibration !== undefined) this.#recalibrate(recalibration);
    this.#batchSeq = (this.#batchSeq + 1) >>> 0;
    const c = this.#counters;
    c.syncs++;
    c.batches++;
    c.records += this.#batchRecords;
    c.saves += this.#inFlight.length;
    c.bytesWritten += this.#batchBytes;
    this.#recordsPerBatch.observe(this.#batchRecords);
  }

  /**
   * Runs with the profile the calibration switched to: the queue's and the segments' knobs from the next batch
   * on (the operator's tuning overrides still win), and the memo rewritten as at open, so the next start
   * begins where this one ended.
   */
  #recalibrate(r: Recalibration): void {
    const tuning = { ...profiles[r.profile], ...this.#options.tuning };
    validateTuning(tuning);
    this.#queue.retune(tuning);
    this.#segments.retune(tuning);
    this.#profile = r.profile;
    this.#measuredSyncLatencyMs = r.medianSyncMs;
    this.#recalibrations++;
    this.#options.logger?.(`wal: ${this.#dir}: storage profile recalibrated from ${r.from} to ${r.profile}: median fdatasync ${r.medianSyncMs.toFixed(2)} ms over ${r.syncs} syncs`);
    const memo = { profile: r.profile, syncLatencyMs: r.medianSyncMs };
    this.#memoChain = this.#memoChain
      .then(() => writeProfileMemo(this.#fs, this.#dir, memo))
      .catch((err: unknown) => {
        // The memo only saves the next start a probe: a full disk keeps the old one (its temp file is removed
        // at the next open) and the WAL runs on. Any other failure is a failed sync, fatal (W7).
        if ((err as NodeJS.ErrnoException | undefined)?.code !== 'ENOSPC') return this.#fail('storage profile memo write', err);
        this.#options.logger?.(`wal: ${this.#dir}: storage profile memo not rewritten (no space left): the next start begins with ${r.from}`);
      });
  }

  #fail(operation: string, cause: unknown): void {
    if (this.#failure) return;
    const err = cause instanceof WalFatalError ? cause : new WalFatalError(operation, cause);
    this.#failure = err;
    const pending = [...this.#inFlight, ...this.#queue.takeAll()];
    this.#inFlight = [];
    for (const s of pending) s.reject(err);
    this.#options.logger?.(err.message);
    this.#options.onFatal?.(err);
  }
}
