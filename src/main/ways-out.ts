/**
 * What an operator can do when a member's own data stops its start (a damaged log, a backend whose snapshot
 * is gone): the README's three procedures, in its words, so every such refusal names the same ways out. A
 * witness has ways out of its own: it holds no data, so no backup restores it and no reset starts a cluster
 * from it; it is replaced by a new witness.
 */
import { hex } from '../base/hex.js';

export function waysOutOfDamage(memberId: bigint): string {
  return 'This member cannot recover on its own. Ways out: ' +
    'restore its data directory from a backup (`etcetera snapshot restore FILE --data-dir NEW-DIR`, then start it from NEW-DIR), ' +
    `or remove it from the cluster (\`etcdctl member remove ${hex(memberId)}\`), wipe its data directory and join again with --server; ` +
    'if it is the last member of its cluster, `--cluster-reset --cluster-reset-restore-path FILE` restores a snapshot into it as a one-member cluster';
}

/** A witness's damaged log: it holds nothing a new witness would not fetch again from the leader. */
export function witnessWaysOutOfDamage(memberId: bigint): string {
  return 'This witness cannot recover on its own, and it holds no data to restore from a backup. Way out: ' +
    `remove it from the cluster (\`etcdctl member remove ${hex(memberId)}\`), wipe its data directory, ` +
    'and start it again as a witness joining the cluster (`etcetera witness --server URL --token TOKEN`, URL a data member\'s)';
}

/**
 * A backend behind the log's snapshot with the snapshot's data gone (a crash before a received snapshot was
 * restored, and its file lost since): the entries between are released from the log, so nothing here can
 * bring the backend up to it.
 */
export function backendBehindSnapshotError(memberDir: string, memberId: bigint, consistentIndex: number, snapshotIndex: number): Error {
  return new Error(
    `${memberDir}: the backend is at index ${consistentIndex}, behind the log's snapshot at ${snapshotIndex}, ` +
    `and the snapshot data is gone. ${waysOutOfDamage(memberId)}`,
  );
}
