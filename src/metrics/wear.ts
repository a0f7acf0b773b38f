/**
 * Flash wear, visible (issue 26, item 4): how many bytes this member writes to its disk per day, and how long
 * a disk of a given endurance lasts at that rate. Pure arithmetic over samples the caller takes
 * (main/wear-watch.ts samples the WAL's, the backend's and the kernel's counters); time is a number passed
 * in, so the maths is tested with any clock.
 *
 * The rate is taken over a sliding day (wearWindowMs): the newest counters against the oldest sample still
 * inside the window (the first sample, taken once the member serves, until a day has passed; a start's own
 * writes are not a rate). Worked example: 4 TBW (4e12 bytes) written at 3 GB a day lasts
 * 4e12 / 3e9 = 1,333 days = 3.65 years.
 *
 * The projection counts what this member writes, on a new disk: the card's earlier wear, other programs and
 * the flash's own write amplification (the rating assumes a workload) are not known here. It takes the larger
 * of the two rates, the member's own count (WAL + backend) and the kernel's (write_bytes of /proc/self/io: every byte the
 * process sent towards the device, in whole pages, including the snapshots it saves), so it never flatters.
 */
import { assert } from '../base/assert.js';
import type { HistogramSnapshot } from '../base/histogram.js';

/** Counters are sampled this often (the sliding day holds 1,440 samples). */
export const wearSampleIntervalMs = 60_000;
/** The rate is bytes written over the last day (or since the first sample, while younger). */
export const wearWindowMs = 24 * 60 * 60 * 1000;
/**
 * A life is projected (and warns) only once its rate covers this long, the declared minimum window: a
 * start's LevelDB compaction or a burst of writes in the first minutes says little about a year (issue 32,
 * item 4: a 10 s old member projected 1.2 years, 24.8 on the next run). Until then the view says measuring.
 */
export const wearWarningSpanMsMin = 60 * 60 * 1000;
/** fsync p50/p99 are of the syncs of the last minute. */
export const fsyncWindowMs = 60_000;

const msPerDay = 24 * 60 * 60 * 1000;
const daysPerYear = 365.25;
export const bytesPerTb = 1e12;

/** Cumulative bytes written, as counters (never decreasing within one process). */
export interface WrittenBytes {
  wal: number;
  backend: number;
  /** /proc/self/io write_bytes; undefined where the kernel does not say (not Linux). */
  process: number | undefined;
}

export interface WearRate {
  /** Bytes per day, by counter, and the one the projection uses: the larger of the member's (WAL + backend) and the kernel's. */
  walPerDay: number;
  backendPerDay: number;
  processPerDay: number | undefined;
  perDay: number;
  /** How long the rate was measured over. */
  spanMs: number;
}

/** Years a disk of `enduranceBytes` lasts at `bytesPerDay`; Infinity when nothing is written. */
export function projectLifeYears(enduranceBytes: number, bytesPerDay: number): number {
  assert(enduranceBytes > 0 && bytesPerDay >= 0, 'endurance above zero, rate not negative');
  return bytesPerDay === 0 ? Infinity : enduranceBytes / bytesPerDay / daysPerYear;
}

export interface WearMeterOptions {
  enduranceBytes: number;
  warningYears: number;
}

/** What the meter says at one moment. */
export interface WearView {
  total: WrittenBytes;
  rate: WearRate | undefined;
  /** Undefined until some time has passed; Infinity while nothing is written. */
  projectedLifeYears: number | undefined;
  /** The projection is under the warning threshold, over a span of at least wearWarningSpanMsMin. */
  warning: boolean;
}

export class WearMeter {
  readonly #o: WearMeterOptions;
  /** Samples, oldest first; the oldest is at most one window old (the one that starts the window). */
  readonly #samples: Array<{ atMs: number; bytes: WrittenBytes }> = [];

  constructor(options: WearMeterOptions) {
    assert(options.enduranceBytes > 0 && options.warningYears > 0, 'endurance and warning years above zero');
    this.#o = options;
  }

  get enduranceBytes(): number {
    return this.#o.enduranceBytes;
  }

  get warningYears(): number {
    return this.#o.warningYears;
  }

  /** Record the counters at `atMs`; samples older than the window are dropped. */
  sample(atMs: number, bytes: WrittenBytes): void {
    const last = this.#samples.at(-1);
    assert(last === undefined || atMs >= last.atMs, 'wear samples in time order');
    this.#samples.push({ atMs, bytes: { ...bytes } });
    while (this.#samples.length > 1 && this.#samples[0]!.atMs < atMs - wearWindowMs) this.#samples.shift();
  }

  /** The view at `nowMs` with the counters `now` (read live, so a status between samples is current). */
  view(nowMs: number, now: WrittenBytes): WearView {
    const first = this.#samples[0];
    if (first === undefined || nowMs <= first.atMs) return { total: now, rate: undefined, projectedLifeYears: undefined, warning: false };
    const spanMs = nowMs - first.atMs;
    const perDay = (later: number, earlier: number): number => (Math.max(0, later - earlier) * msPerDay) / spanMs;
    const walPerDay = perDay(now.wal, first.bytes.wal);
    const backendPerDay = perDay(now.backend, first.bytes.backend);
    const processPerDay = now.process !== undefined && first.bytes.process !== undefined ? perDay(now.process, first.bytes.process) : undefined;
    const rate: WearRate = { walPerDay, backendPerDay, processPerDay, perDay: Math.max(walPerDay + backendPerDay, processPerDay ?? 0), spanMs };
    const years = projectLifeYears(this.#o.enduranceBytes, rate.perDay);
    const measured = spanMs >= wearWarningSpanMsMin;
    return { total: now, rate, projectedLifeYears: measured ? years : undefined, warning: measured && years < this.#o.warningYears };
  }
}

/**
 * The q-quantile of the observations between two snapshots of one histogram (the older may be undefined:
 * all of them), interpolated linearly inside its bucket as Prometheus's histogram_quantile does; undefined
 * when nothing was observed between them. An observation in the +Inf bucket counts at the last bound.
 */
export function quantileBetween(q: number, older: HistogramSnapshot | undefined, newer: HistogramSnapshot): number | undefined {
  assert(q >= 0 && q <= 1, 'a quantile is in [0, 1]');
  const counts = newer.cumulative.map((c, i) => c - (older?.cumulative[i] ?? 0));
  const total = counts.at(-1)!;
  if (total <= 0) return undefined;
  const rank = q * total;
  for (let i = 0; i < newer.bounds.length; i++) {
    if (counts[i]! >= rank) {
      const lower = i === 0 ? 0 : newer.bounds[i - 1]!;
      const below = i === 0 ? 0 : counts[i - 1]!;
      const inBucket = counts[i]! - below;
      return inBucket === 0 ? lower : lower + ((newer.bounds[i]! - lower) * (rank - below)) / inBucket;
    }
  }
  return newer.bounds.at(-1)!;
}

/** The fsync histogram is remembered this often, for the quantiles of the last minute. */
export const fsyncSampleIntervalMs = 10_000;

/** Snapshots of a cumulative histogram over the last fsyncWindowMs, for quantiles of that window. */
export class RecentHistogram {
  readonly #snapshots: Array<{ atMs: number; h: HistogramSnapshot }> = [];

  sample(atMs: number, h: HistogramSnapshot): void {
    this.#snapshots.push({ atMs, h });
    // Keep the newest snapshot at least a window old (it starts the window), and everything after it.
    while (this.#snapshots.length > 1 && this.#snapshots[1]!.atMs <= atMs - fsyncWindowMs) this.#snapshots.shift();
  }

  /** Quantiles of what `now` observed since the window's start (all of it before any sample). */
  between(nowMs: number, now: HistogramSnapshot, qs: readonly number[]): { quantiles: (number | undefined)[]; count: number; spanMs: number | undefined } {
    const start = this.#snapshots.find((s, i) => i === this.#snapshots.length - 1 || this.#snapshots[i + 1]!.atMs > nowMs - fsyncWindowMs);
    return {
      quantiles: qs.map((q) => quantileBetween(q, start?.h, now)),
      count: now.count - (start?.h.count ?? 0),
      spanMs: start === undefined ? undefined : nowMs - start.atMs,
    };
  }
}
