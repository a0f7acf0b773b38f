/**
 * What an operator can do when a member's own data stops its start (a damaged log, a backend whose snapshot
 * is gone): the README's three procedures, in its words, so every such refusal names the same ways out.
 */
import { hex } from '../base/hex.js';

export function waysOutOfDamage(memberId: bigint): string {
  return 'This member cannot recover on its own. Ways out: ' +
    'restore its data directory from a backup (`etcetera snapshot restore FILE --data-dir NEW-DIR`, then start it from NEW-DIR), ' +
    `or remove it from the cluster (\`etcdctl member remove ${hex(memberId)}\`), wipe its data directory and join again with --server; ` +
    'if it is the last member of its cluster, `--cluster-reset --cluster-reset-restore-path FILE` restores a snapshot into it as a one-member cluster';
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
