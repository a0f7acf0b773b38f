/** The WAL's counters, shaped for Prometheus export by the server. */
import type { HistogramSnapshot } from '../base/histogram.js';

export { Histogram, type HistogramSnapshot } from '../base/histogram.js';

/** etcd's etcd_disk_wal_fsync_duration_seconds buckets: 0.001 * 2^k seconds, k = 0..13. */
export const syncSecondsBounds: readonly number[] = Array.from({ length: 14 }, (_, k) => 0.001 * 2 ** k);
/** Records per batch: 1, 2, 4, ... 4096. */
export const recordsPerBatchBounds: readonly number[] = Array.from({ length: 13 }, (_, k) => 2 ** k);

export interface WalMetrics {
  profile: string;
  /**
   * Median fdatasync latency behind the profile, in ms: measured at open or remembered (auto), then the
   * window median of the last recalibration; undefined when the profile was given.
   */
  measuredSyncLatencyMs: number | undefined;
  /** Times `auto` switched profile while running (profile-calibration.ts). */
  profileRecalibrations: number;
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
