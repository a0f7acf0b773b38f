/** The WAL's counters, shaped for Prometheus export by the server. */

/** etcd's etcd_disk_wal_fsync_duration_seconds buckets: 0.001 * 2^k seconds, k = 0..13. */
export const syncSecondsBounds: readonly number[] = Array.from({ length: 14 }, (_, k) => 0.001 * 2 ** k);
/** Records per batch: 1, 2, 4, ... 4096. */
export const recordsPerBatchBounds: readonly number[] = Array.from({ length: 13 }, (_, k) => 2 ** k);

export interface HistogramSnapshot {
  /** Upper bounds (le); an implicit +Inf bucket follows. */
  bounds: readonly number[];
  /** Cumulative counts per bound, then +Inf (length bounds.length + 1), as Prometheus exposes them. */
  cumulative: number[];
  sum: number;
  count: number;
}

export class Histogram {
  readonly #bounds: readonly number[];
  readonly #counts: number[];
  #sum = 0;
  #count = 0;
  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
    this.#counts = new Array<number>(bounds.length + 1).fill(0);
  }
  observe(value: number): void {
    let i = 0;
    while (i < this.#bounds.length && value > this.#bounds[i]!) i++;
    this.#counts[i]!++;
    this.#sum += value;
    this.#count++;
  }
  snapshot(): HistogramSnapshot {
    let acc = 0;
    const cumulative = this.#counts.map((c) => (acc += c));
    return { bounds: this.#bounds, cumulative, sum: this.#sum, count: this.#count };
  }
}

export interface WalMetrics {
  profile: string;
  /** Median fdatasync latency measured at open (auto profile), in ms; undefined when not measured. */
  measuredSyncLatencyMs: number | undefined;
  syncs: number;
  syncSeconds: HistogramSnapshot;
  /** Bytes handed to write(2) for log batches (excludes preallocation, see preallocatedBytes). */
  bytesWritten: number;
  preallocatedBytes: number;
  batches: number;
  records: number;
  saves: number;
  recordsPerBatch: HistogramSnapshot;
  segmentsCreated: number;
  segmentsReleased: number;
  segmentsRecycled: number;
}
