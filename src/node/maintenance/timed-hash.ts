/**
 * etcd_mvcc_hash_duration_seconds (Hash) and etcd_mvcc_hash_rev_duration_seconds (a hash at a revision:
 * HashKV, and its own and its peers' side of the corruption check): each hash this member computes, timed on
 * the member's scheduler (simulated time in the simulator, so the store's hashing itself stays clock-free).
 */
import { schedulerOf, type EtcdServerParts } from '../etcd-server-parts.js';

export async function timedHash<T>(
  parts: Pick<EtcdServerParts, 'scheduler' | 'metrics'>,
  kind: 'hash' | 'hashKV',
  run: () => Promise<T>,
): Promise<T> {
  const scheduler = schedulerOf(parts);
  const startMs = scheduler.nowMs();
  try {
    return await run();
  } finally {
    (kind === 'hash' ? parts.metrics.hashSeconds : parts.metrics.hashRevSeconds).observe((scheduler.nowMs() - startMs) / 1000);
  }
}
