/**
 * etcd_disk_backend_snapshot_duration_seconds: each exported backend view, from when it is taken to its
 * close, observed once (issue 32, item 4).
 */
import { describe, expect, it } from 'vitest';
import { createServerMetrics } from '../../../src/metrics/server-metrics.js';
import type { SnapshotExport } from '../../../src/mvcc/kv-store.js';
import { timedExporter } from '../../../src/node/maintenance/timed-snapshot.js';

describe('timedExporter', () => {
  it('observes how long each export\'s view stayed open, once per view, and still closes the view', async () => {
    let now = 1000;
    let closes = 0;
    const exporter = {
      exportSnapshot: async (): Promise<SnapshotExport> => {
        now += 50; // flushing before the view is taken is not the snapshot's time
        return {
          consistentIndex: 7, term: 2, meta: new Map(), chunks: async function* () {},
          view: { get: () => Promise.resolve(undefined), scan: async function* () {}, close: () => Promise.resolve(void closes++) },
        };
      },
    };
    const metrics = createServerMetrics();
    const timed = timedExporter(exporter, metrics.backendSnapshotSeconds, () => now);
    const a = await timed.exportSnapshot();
    expect(a.consistentIndex).toBe(7);
    now += 30; // a small snapshot sent to a follower
    await a.view.close();
    await a.view.close();
    const b = await timed.exportSnapshot();
    now += 3000; // a big one
    await b.view.close();
    expect(closes).toBe(3);
    const text = metrics.registry.expose();
    expect(text).toContain('etcd_disk_backend_snapshot_duration_seconds_bucket{le="0.04"} 1\n');
    expect(text).toContain('etcd_disk_backend_snapshot_duration_seconds_bucket{le="5.12"} 2\n');
    expect(text).toContain('etcd_disk_backend_snapshot_duration_seconds_bucket{le="655.36"} 2\n');
    expect(text).toContain('etcd_disk_backend_snapshot_duration_seconds_count 2\n');
    expect(text).toContain('etcd_disk_backend_snapshot_duration_seconds_sum 3.03\n');
  });
});
