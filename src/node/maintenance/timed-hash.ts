/**
 * etcd_mvcc_hash_duration_seconds: every hash of the key space this member computes (Hash, HashKV, its own
 * and its peers' side of the corruption check), timed on the member's scheduler (simulated time in the
 * simulator, so the store's hashing itself stays clock-free).
 */
import { schedulerOf, type EtcdServerParts } from '../etcd-server-parts.js';

export async function timedHash<T>(parts: Pick<EtcdServerParts, 'scheduler' | 'metrics'>, run: () => Promise<T>): Promise<T> {
  const scheduler = schedulerOf(parts);
  const startMs = scheduler.nowMs();
  try {
    return await run();
  } finally {
    parts.metrics.hashSeconds.observe((scheduler.nowMs() - startMs) / 1000);
  }
}
