/**
 * etcd_disk_backend_snapshot_duration_seconds: etcd times each backend snapshot from its read transaction's
 * start to its close (a Maintenance.Snapshot, a snapshot sent to a follower). Ours: each export's backend
 * view from the moment it is taken to its close: a follower's snapshot until it is sent, Maintenance.Snapshot
 * and scheduled snapshots until the file is written (the view is released before a slow client reads it).
 * Timed on the caller's clock (the member's scheduler: simulated time in the simulator).
 */
import type { BackendView } from '../../mvcc/backend.js';
import type { SnapshotExport } from '../../mvcc/kv-store.js';
import type { Histogram } from '../../metrics/metrics.js';
import type { SnapshotExporter } from '../../etcd-db/export.js';

/** An exporter whose exports observe `seconds` once, when their view is closed. */
export function timedExporter(exporter: SnapshotExporter, seconds: Histogram, nowMs: () => number): SnapshotExporter {
  return {
    async exportSnapshot(): Promise<SnapshotExport> {
      const exported = await exporter.exportSnapshot();
      const startMs = nowMs();
      const inner = exported.view;
      let closed = false;
      const view: BackendView = {
        get: (bucket, key) => inner.get(bucket, key),
        scan: (bucket, options) => inner.scan(bucket, options),
        close: () => {
          if (!closed) seconds.observe((nowMs() - startMs) / 1000);
          closed = true;
          return inner.close();
        },
      };
      return { ...exported, view };
    },
  };
}
