/**
 * etcd_disk_defrag_inflight follows the backend's defragment: 1 while it runs (twice: 2), 0 after, failures
 * included; etcd_disk_backend_defrag_duration_seconds counts each one (issue 32, item 4).
 */
import { describe, expect, it } from 'vitest';
import { Registry } from '../../src/metrics/metrics.js';
import { defragSecondsBuckets, trackDefragments } from '../../src/metrics/backend-timing.js';
import type { Backend } from '../../src/mvcc/backend.js';

describe('trackDefragments', () => {
  it('is 1 while a defragmentation runs and 0 once it ended, even when it failed', async () => {
    const registry = new Registry();
    const gauge = registry.gauge({ name: 'etcd_disk_defrag_inflight', help: 'h' });
    const seconds = registry.histogram({ name: 'etcd_disk_backend_defrag_duration_seconds', help: 'h', buckets: defragSecondsBuckets });
    const finish: Array<(error?: Error) => void> = [];
    const backend = {
      defragment: () => new Promise<void>((resolve, reject) => finish.push((error) => (error ? reject(error) : resolve()))),
    } as unknown as Backend;
    trackDefragments(backend, gauge, seconds);
    expect(gauge.get()).toBe(0);
    const first = backend.defragment();
    expect(gauge.get()).toBe(1);
    const second = backend.defragment();
    expect(gauge.get()).toBe(2);
    finish[0]!();
    await first;
    expect(gauge.get()).toBe(1);
    finish[1]!(new Error('disk'));
    await expect(second).rejects.toThrow('disk');
    expect(gauge.get()).toBe(0);
    expect(registry.expose()).toMatch(/^etcd_disk_backend_defrag_duration_seconds_count 2$/m);
    expect(defragSecondsBuckets[defragSecondsBuckets.length - 1]).toBeCloseTo(409.6);
  });
});
