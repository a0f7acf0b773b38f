/**
 * The restore point: the backend side of a member built from outside data (a snapshot restore of ours or of
 * etcd's, a migration from kine or etcd, a cluster reset from a backup), as etcd's `snapshot restore` builds it.
 *
 * The imported store is the state of the new cluster as of Raft index `members.length` (term 1): the member
 * list and the configuration are already in the backend, the consistent index is that index, and the log
 * (written beside it by the importer) starts with a snapshot record at it, holding no entries. A member that
 * joins later is therefore behind the leader's first log index and must receive a snapshot of the store.
 * Writing the bootstrap conf changes into the log instead (with consistent index 0) let a joiner replay
 * them onto an empty store: it served no keys, and the cluster forked (issue 25, item 1).
 *
 * Worked example: three members restored with one --initial-cluster: backend consistent_index 3, term 1,
 * confState {voters [a, b, c]}, members a, b, c; log: snapshot {index 3, term 1}, hard state {term 1, commit 3}.
 */
import type { BatchOp } from '../../mvcc/backend.js';
import { consistentIndexKey, termKey, u64Bytes } from '../../mvcc/kv-meta.js';
import type { ConfState, SnapshotMeta } from '../../raft/types.js';
import type { Member } from '../api-types.js';
import { pack } from '../../storage/entry-codec.js';
import { encodeMemberEntry } from '../../storage/members-bucket.js';

/** Meta key of the Raft configuration as of the consistent index (msgpack {voters, learners[, witnesses]}). */
export const confStateKey = new TextEncoder().encode('confState');
export const latin1ConfStateKey = 'confState';

export function encodeConfStateMeta(cs: ConfState): Uint8Array {
  const witnesses = cs.witnesses ?? [];
  return pack(witnesses.length > 0 ? { voters: cs.voters, learners: cs.learners, witnesses } : { voters: cs.voters, learners: cs.learners });
}

/** The Raft snapshot a restored member's log starts from: every initial member a voter, at index = their count. */
export function restorePointMeta(members: readonly Member[]): SnapshotMeta {
  return { index: members.length, term: 1, confState: { voters: members.map((m) => m.id), learners: [] } };
}

/** Backend writes that put a store at `point` with `members` as its member list. */
export function restorePointOps(members: readonly Member[], point: SnapshotMeta): BatchOp[] {
  const ops: BatchOp[] = members.map((m) => {
    const [key, value] = encodeMemberEntry(m);
    return { type: 'put', bucket: 'members', key, value };
  });
  ops.push(
    { type: 'put', bucket: 'meta', key: confStateKey, value: encodeConfStateMeta(point.confState) },
    { type: 'put', bucket: 'meta', key: consistentIndexKey, value: u64Bytes(point.index) },
    { type: 'put', bucket: 'meta', key: termKey, value: u64Bytes(point.term) },
  );
  return ops;
}
