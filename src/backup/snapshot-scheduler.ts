/**
 * Scheduled snapshots (k3s's etcd-snapshot schedule): at each time the cron spec names, write a snapshot to
 * `<dir>/etcd-snapshot-<node>-<unix seconds>` (gzipped to `.gz` when asked), then keep only the newest
 * `retention` of this node's scheduled snapshots. One snapshot at a time: the next firing time is computed
 * once the previous snapshot is done, so a slow snapshot delays the next rather than piling up.
 *
 * Time and timers are injected (the wall clock for cron, a timer port for waiting) and so is the snapshot
 * itself (`takeSnapshot(path)`), so tests drive the schedule with a manual clock and a fake snapshot.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { scheduledSnapshotWakeMsMax } from '../base/limits.js';
import type { CronSchedule } from '../config/cron.js';
import { publishFile } from '../wal/atomic-file.js';
import { NodeFsPort } from '../wal/fs-port.js';
import { partialSuffix, pruneSnapshots, scheduledSnapshotName } from './snapshot-dir.js';

const nodeFs = new NodeFsPort();

export interface SchedulerTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface SchedulerLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export type SnapshotResult =
  | { ok: true; path: string; sizeBytes: number; atMs: number; pruned: string[] }
  | { ok: false; error: string; atMs: number };

export interface SnapshotSchedulerOptions {
  schedule: CronSchedule;
  /** Wall-clock milliseconds since the epoch (cron times and file names are wall time). */
  now(): number;
  timers: SchedulerTimers;
  /** Writes a complete snapshot file at `path`. */
  takeSnapshot(path: string): Promise<void>;
  dir: string;
  nodeName: string;
  retention: number;
  compress: boolean;
  logger: SchedulerLogger;
  /** Called after every attempt (metrics). */
  onResult?(result: SnapshotResult): void;
}

export class SnapshotScheduler {
  readonly #o: SnapshotSchedulerOptions;
  #timer: unknown;
  #dueMs = 0;
  #running: Promise<SnapshotResult> | undefined;
  #stopped = true;

  constructor(options: SnapshotSchedulerOptions) {
    if (!Number.isSafeInteger(options.retention) || options.retention < 1) throw new TypeError(`retention must be at least 1, got ${options.retention}`);
    if (options.nodeName === '' || options.nodeName.includes('/')) throw new TypeError(`bad node name ${JSON.stringify(options.nodeName)}`);
    this.#o = options;
  }

  /** When the next scheduled snapshot is due (wall ms), once started. */
  get dueMs(): number {
    return this.#dueMs;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#dueMs = this.#o.schedule.next(this.#o.now());
    this.#o.logger.info('scheduled snapshots on', { schedule: this.#o.schedule.text, dir: this.#o.dir, retention: this.#o.retention, next: new Date(this.#dueMs).toISOString() });
    this.#arm();
  }

  /** Stops scheduling and waits for a snapshot in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** Takes one snapshot now (also what each firing does); never throws, the result says what happened. */
  snapshotNow(): Promise<SnapshotResult> {
    this.#running ??= this.#snapshot().finally(() => (this.#running = undefined));
    return this.#running;
  }

  #arm(): void {
    if (this.#stopped) return;
    // Wake at most every scheduledSnapshotWakeMsMax: timers cannot wait for a yearly spec, and the wall
    // clock may jump meanwhile.
    const waitMs = Math.min(Math.max(0, this.#dueMs - this.#o.now()), scheduledSnapshotWakeMsMax);
    this.#timer = this.#o.timers.setTimeout(() => void this.#wake(), waitMs);
  }

  async #wake(): Promise<void> {
    this.#timer = undefined;
    if (this.#stopped) return;
    if (this.#o.now() >= this.#dueMs) {
      await this.snapshotNow();
      // The next time after the one just served, or after now when the snapshot ran past it.
      this.#dueMs = this.#o.schedule.next(Math.max(this.#dueMs, this.#o.now()));
    }
    this.#arm();
  }

  async #snapshot(): Promise<SnapshotResult> {
    const o = this.#o;
    const atMs = o.now();
    const final = join(o.dir, scheduledSnapshotName(o.nodeName, Math.floor(atMs / 1000), o.compress));
    const raw = `${final}.raw${partialSuffix}`;
    const packed = `${final}${partialSuffix}`;
    let result: SnapshotResult;
    try {
      await mkdir(o.dir, { recursive: true, mode: 0o700 });
      await o.takeSnapshot(raw);
      if (o.compress) {
        await pipeline(createReadStream(raw), createGzip(), createWriteStream(packed, { mode: 0o600 }));
        await unlink(raw);
        await publishFile(nodeFs, packed, final);
      } else {
        await publishFile(nodeFs, raw, final);
      }
      const sizeBytes = (await stat(final)).size;
      const pruned = await pruneSnapshots(o.dir, o.nodeName, o.retention);
      result = { ok: true, path: final, sizeBytes, atMs, pruned };
      o.logger.info('scheduled snapshot saved', { path: final, sizeBytes, pruned });
    } catch (error) {
      await Promise.all([unlink(raw).catch(() => {}), unlink(packed).catch(() => {})]);
      result = { ok: false, error: error instanceof Error ? error.message : String(error), atMs };
      o.logger.error('scheduled snapshot failed', { path: final, error: result.error });
    }
    o.onResult?.(result);
    return result;
  }
}
