/**
 * Scheduled snapshots of a running member (src/backup/snapshot-scheduler.ts on the real clock and timers),
 * with their metrics and the snapshot writer.
 *
 * Metrics (ours; etcd has no scheduler, k3s none on /metrics):
 *   etcetera_snapshot_save_total{result="success"|"failure"}
 *   etcetera_snapshot_last_success_timestamp_seconds, etcetera_snapshot_last_failure_timestamp_seconds
 *   etcetera_snapshot_last_size_bytes
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { parseCron } from '../backup/cron.js';
import { SnapshotScheduler } from '../backup/snapshot-scheduler.js';
import type { SnapshotSource } from './api.js';
import { snapshotPaddingBytes } from './grpc/maintenance-service.js';
import type { Logger } from './log.js';
import type { ScheduledSnapshots } from './member-options.js';
import type { Registry } from './metrics.js';

export interface ScheduledSnapshotsInput {
  options: ScheduledSnapshots;
  /** The member's name: part of every file name, and whose snapshots retention counts. */
  nodeName: string;
  /** A consistent copy of the backend (the same source as Maintenance.Snapshot). */
  snapshot(): Promise<SnapshotSource>;
  registry: Registry;
  logger: Logger;
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
    takeSnapshot: async (path) => writeSnapshotFile(await input.snapshot(), path),
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
      } else {
        lastFailure.set(r.atMs / 1000);
      }
    },
  });
  scheduler.start();
  return scheduler;
}

/**
 * The file `etcdctl snapshot save` would write from our Maintenance.Snapshot stream: the data, zero padding
 * to a multiple of 512 bytes, their SHA-256.
 */
export async function writeSnapshotFile(source: SnapshotSource, path: string): Promise<void> {
  const fh = await open(path, 'wx', 0o600);
  try {
    const hash = createHash('sha256');
    for await (const chunk of source.chunks) {
      hash.update(chunk);
      await fh.write(chunk);
    }
    const padding = new Uint8Array(snapshotPaddingBytes(source.sizeBytes));
    hash.update(padding);
    await fh.write(padding);
    await fh.write(hash.digest());
  } finally {
    await fh.close();
  }
}
