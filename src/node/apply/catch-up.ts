/** Tick and log-retention arithmetic shared by apply, snapshots and the composition root. */
import { catchUpBytesMax, snapshotCatchUpEntries } from '../../base/limits.js';

export function electionTicksOf(electionMs: number, heartbeatMs: number): number {
  return Math.max(2, Math.round(electionMs / heartbeatMs));
}

/**
 * Entries kept behind a snapshot (etcd: SnapshotCatchUpEntries = 5,000): at most half the snapshot count,
 * and no more than about catchUpBytesMax of them, judged by the average entry since the last snapshot.
 */
export function catchUpEntries(snapshotCount: number, entriesSince: number, bytesSince: number): number {
  const byCount = Math.min(snapshotCatchUpEntries, Math.max(1, Math.floor(snapshotCount / 2)));
  const averageBytes = entriesSince > 0 ? bytesSince / entriesSince : 0;
  const byBytes = averageBytes > 0 ? Math.floor(catchUpBytesMax / averageBytes) : byCount;
  return Math.max(1, Math.min(byCount, byBytes));
}
