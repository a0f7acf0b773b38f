/**
 * The member's flash-wear watch (issue 26, item 4; the maths: metrics/wear.ts). Every wearSampleIntervalMs it
 * samples the bytes written to the WAL (records and segment zero-fill), to the backend (LevelBackend.writtenBytes)
 * and by the whole process (/proc/self/io write_bytes), and logs a warning once when the projected disk life
 * falls under --storage-life-warning-years (again only after it recovered). Every fsyncSampleIntervalMs it
 * remembers the WAL's fsync histogram, for the p50/p99 of the last minute that `etcetera status` shows.
 * Exported as etcetera_disk_* (registerWearMetrics) and in GET /status (member-status.ts).
 */
import { readFileSync } from 'node:fs';
import type { HistogramSnapshot } from '../base/histogram.js';
import type { Logger } from '../config/log.js';
import {
  RecentHistogram, WearMeter, bytesPerTb, fsyncSampleIntervalMs, wearSampleIntervalMs, type WearView, type WrittenBytes,
} from '../metrics/wear.js';

export interface WearWatchHost {
  enduranceTbw: number;
  warningYears: number;
  walBytes(): number;
  backendBytes(): number;
  fsyncSeconds(): HistogramSnapshot;
  logger: Logger;
  /** Default: /proc/self/io's write_bytes (processWriteBytes); tests inject counters and a clock. */
  processBytes?: () => number | undefined;
  nowMs?: () => number;
}

export interface FsyncView {
  p50Seconds: number | undefined;
  p99Seconds: number | undefined;
  syncs: number;
  spanMs: number | undefined;
}

export class WearWatch {
  readonly #h: WearWatchHost;
  readonly #meter: WearMeter;
  readonly #fsync = new RecentHistogram();
  readonly #now: () => number;
  readonly #timers: Array<{ cancel(): void }> = [];
  #warned = false;

  constructor(host: WearWatchHost) {
    this.#h = host;
    this.#now = host.nowMs ?? (() => performance.now());
    this.#meter = new WearMeter({ enduranceBytes: host.enduranceTbw * bytesPerTb, warningYears: host.warningYears });
  }

  get meter(): WearMeter {
    return this.#meter;
  }

  /** The counters now. */
  written(): WrittenBytes {
    return { wal: this.#h.walBytes(), backend: this.#h.backendBytes(), process: (this.#h.processBytes ?? processWriteBytes)() };
  }

  /**
   * Takes the first samples (the rate starts here) and starts the timers: on `runner` when given (a member
   * passes its Raft tick, EtcdServer.every), else timers of their own.
   */
  start(runner?: (ms: number, fn: () => void) => { cancel(): void }): void {
    this.sampleWear();
    this.#fsync.sample(this.#now(), this.#h.fsyncSeconds());
    const every = (ms: number, fn: () => void): void => {
      if (runner !== undefined) return void this.#timers.push(runner(ms, fn));
      const t = setInterval(fn, ms);
      t.unref();
      this.#timers.push({ cancel: () => clearInterval(t) });
    };
    every(wearSampleIntervalMs, () => this.sampleWear());
    every(fsyncSampleIntervalMs, () => this.#fsync.sample(this.#now(), this.#h.fsyncSeconds()));
  }

  stop(): void {
    for (const t of this.#timers.splice(0)) t.cancel();
  }

  /** One wear sample, and the warning when the projection crosses the threshold. */
  sampleWear(): void {
    const now = this.#now();
    const written = this.written();
    this.#meter.sample(now, written);
    const v = this.#meter.view(now, written);
    if (v.warning && !this.#warned) {
      this.#h.logger.warn('the disk wears out too soon at this write rate: its projected life is under --storage-life-warning-years', {
        projectedLifeYears: round(v.projectedLifeYears!, 2), warningYears: this.#h.warningYears, bytesPerDay: Math.round(v.rate!.perDay),
        enduranceTbw: this.#h.enduranceTbw, measuredOverHours: round(v.rate!.spanMs / 3_600_000, 1),
        advice: 'set --storage-endurance-tbw to the disk\'s rating, reduce writes (fewer keys or updates, compaction), or move the data directory to a disk with more endurance',
      });
    }
    this.#warned = v.warning;
  }

  view(): WearView {
    return this.#meter.view(this.#now(), this.written());
  }

  fsync(): FsyncView {
    const r = this.#fsync.between(this.#now(), this.#h.fsyncSeconds(), [0.5, 0.99]);
    return { p50Seconds: r.quantiles[0], p99Seconds: r.quantiles[1], syncs: r.count, spanMs: r.spanMs };
  }
}

/** write_bytes of /proc/self/io: bytes this process caused to be sent to storage; undefined off Linux. */
export function processWriteBytes(): number | undefined {
  try {
    const m = /^write_bytes:\s+(\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'));
    return m === null ? undefined : Number(m[1]);
  } catch {
    return undefined;
  }
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
