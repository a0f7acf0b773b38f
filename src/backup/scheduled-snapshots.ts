/**
 * Scheduled snapshots of a running member (src/backup/snapshot-scheduler.ts on the real clock and timers),
 * with their metrics. Each snapshot is an etcd-format file (src/etcd-db/export.ts): `etcdctl snapshot status`
 * and `restore`, `etcetera snapshot restore` and `--cluster-reset-restore-path` read it.
 *
 * Metrics (ours; etcd has no scheduler, k3s none on /metrics):
 *   etcetera_snapshot_save_total{result="success"|"failure"}
 *   etcetera_snapshot_last_success_timestamp_seconds, etcetera_snapshot_last_failure_timestamp_seconds
 *   etcetera_snapshot_last_size_bytes
 */
import { parseCron } from '../config/cron.js';
import type { SnapshotExporter } from '../etcd-db/export.js';
import { SnapshotScheduler } from './snapshot-scheduler.js';
import type { Logger } from '../config/log.js';
import type { ScheduledSnapshots } from '../config/member-options.js';
import type { Registry } from '../metrics/metrics.js';
import type { OffsiteUploads } from './offsite-uploads.js';

export interface ScheduledSnapshotsInput {
  options: ScheduledSnapshots;
  /** The member's name: part of every file name, and whose snapshots retention counts. */
  nodeName: string;
  /** The store: each snapshot is an etcd-format file of one consistent view of it (what etcdctl snapshot save writes). */
  store: SnapshotExporter;
  /** For the snapshot's cluster bucket. */
  serverVersion: string;
  registry: Registry;
  logger: Logger;
  /** --etcd-s3: each snapshot saved is then handed over for upload (never awaited here). */
  offsite?: OffsiteUploads;
}

export function startScheduledSnapshots(input: ScheduledSnapshotsInput): SnapshotScheduler {
  const { options, registry } = input;
  const saves = registry.counter({ name: 'etcetera_snapshot_save_total', help: 'Scheduled snapshots attempted, by result.', labelNames: ['result'] });
  const lastSuccess = registry.gauge({ name: 'etcetera_snapshot_last_success_timestamp_seconds', help: 'Unix time of the last scheduled snapshot saved.' });
  const lastFailure = registry.gauge({ name: 'etcetera_snapshot_last_failure_timestamp_seconds', help: 'Unix time of the last scheduled snapshot that failed.' });
  const lastSize = registry.gauge({ name: 'etcetera_snapshot_last_size_bytes', help: 'Size of the last scheduled snapshot saved (after compression).' });
  const scheduler = new SnapshotScheduler({
    schedule: parseCron(options.schedule),
    now: () => Date.now(),
    timers: {
      setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
      clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
    },
    takeSnapshot: async (path) => {
      // The etcd file writer (etcd-db, bbolt) loads at the first snapshot, hours after the start (issue 34).
      const { saveSnapshotFile } = await import('../etcd-db/export.js');
      await saveSnapshotFile(input.store, path, { serverVersion: input.serverVersion });
    },
    dir: options.dir,
    nodeName: input.nodeName,
    retention: options.retention,
    compress: options.compress,
    logger: input.logger.child({ component: 'snapshots' }),
    onResult: (r) => {
      saves.inc(1, { result: r.ok ? 'success' : 'failure' });
      if (r.ok) {
        lastSuccess.set(r.atMs / 1000);
        lastSize.set(r.sizeBytes);
        input.offsite?.enqueue(r.path);
      } else {
        lastFailure.set(r.atMs / 1000);
      }
    },
  });
  scheduler.start();
  return scheduler;
}
