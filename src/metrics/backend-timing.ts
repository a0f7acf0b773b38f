/**
 * etcd_disk_backend_commit_duration_seconds: the time of each backend batch write (our commit), measured
 * around the backend's write; etcd_disk_defrag_inflight: 1 while the backend rewrites its files (Defragment,
 * or the rewrite after a compaction, the same operation), and etcd_disk_backend_defrag_duration_seconds its
 * duration. The backend itself (src/mvcc) stays free of clocks.
 */
import type { Backend } from '../mvcc/backend.js';
import type { Gauge, Histogram } from './metrics.js';

export function timeBackendCommits(backend: Backend, seconds: Histogram): void {
  const write = backend.write.bind(backend);
  backend.write = async (ops, options) => {
    const start = performance.now();
    try {
      await write(ops, options);
    } finally {
      seconds.observe((performance.now() - start) / 1000);
    }
  };
}

/** etcd 3.4's buckets for etcd_disk_backend_defrag_duration_seconds: 0.1 s × 2^0..12 (100 MB takes about 1 s). */
export const defragSecondsBuckets: readonly number[] = Array.from({ length: 13 }, (_, i) => 0.1 * 2 ** i);

export function trackDefragments(backend: Backend, inflight: Gauge, seconds: Histogram): void {
  const defragment = backend.defragment.bind(backend);
  backend.defragment = async () => {
    inflight.inc();
    const start = performance.now();
    try {
      await defragment();
    } finally {
      inflight.dec();
      seconds.observe((performance.now() - start) / 1000);
    }
  };
}
