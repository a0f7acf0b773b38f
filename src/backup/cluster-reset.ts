/**
 * `--force-new-cluster` (etcd) and `--cluster-reset` (k3s): a member that survived the permanent loss of its
 * cluster's quorum becomes the only member of that cluster, with all its committed data, the same cluster id
 * and its own member id.
 *
 * As etcd's restartAsStandaloneNode does, the reset is written into the Raft log, not around it: one
 * conf-change entry per other member removes it (and one makes this member a voter if it was a learner), all
 * committed at once after the last entry the member holds. The entries are saved to the WAL before Raft
 * starts, so the apply path turns them into the backend's member list like any other committed change, and
 * every later restart (without the flag) replays a one-member configuration. Doing it again on a one-member
 * cluster changes nothing, so leaving the flag on is harmless.
 *
 * Unlike etcd, the entries after the recorded commit index are kept and committed, not discarded: the commit
 * index reaches a follower one heartbeat after the entries, and a commit-only hard state is not synced
 * (src/wal/save-request.ts), so an entry past the durable commit may well have been committed by the lost
 * majority and acknowledged to its client. Discarding it could lose an acknowledged write; keeping it can
 * only make a write whose outcome the client never learned take effect, which a client must allow for any
 * request that failed or timed out.
 *
 * Worked example: a 3-member log [1..40], durable commit 38, term 5, members {a (self), b, c}. After the reset
 * the log is [1..40] + [41: remove b, 42: remove c] at term 5, commit 42.
 */
import { assert } from '../base/assert.js';
import { clusterResetApplyMsMax } from '../base/limits.js';
import { MemberConfig, decodeConfChange, encodeConfChange } from '../raft/conf.js';
import { EntryType, type ConfChange, type Entry, type HardState, type SnapshotMeta } from '../raft/types.js';
import type { Member } from '../node/server-api.js';
import type { Logger } from '../config/log.js';
import type { EtcdServer } from '../node/etcd-server.js';
import { decodeConfChangeContext, encodeConfChangeContext } from '../node/driver/raft-request.js';

export interface ResetInput {
  hardState: HardState;
  snapshot: SnapshotMeta;
  entries: readonly Entry[];
}

export interface ResetPlan {
  /** The entries to append after the last entry held. */
  entries: Entry[];
  hardState: HardState;
  /** Members the reset removes (voters and learners). */
  removed: bigint[];
  /** This member was a learner and becomes the voter. */
  promotedSelf: boolean;
  /** Entries past the recorded commit index that the reset commits. */
  adopted: number;
}

/**
 * The conf-change entries that leave `self` as the only voter (etcd's getIDs + createConfigChangeEnts), or
 * undefined when it already is. Pure: reads only the log as recovered from the WAL.
 */
export function planClusterReset(log: ResetInput, self: Member): ResetPlan | undefined {
  const { hardState, snapshot, entries: held } = log;
  const conf = new MemberConfig(snapshot.confState);
  for (const e of held) if (e.type === EntryType.ConfChange) conf.apply(decodeConfChange(e.data));
  const removed = conf.members().filter((id) => id !== self.id);
  const promotedSelf = !conf.isVoter(self.id);
  if (removed.length === 0 && !promotedSelf) return undefined;
  const changes: ConfChange[] = removed.map((nodeId) => ({ type: 'removeNode', nodeId, context: contextOf(nodeId, held) }));
  if (promotedSelf) changes.push({ type: 'addVoter', nodeId: self.id, context: encodeConfChangeContext({ id: 0n, member: { ...self, isLearner: false } }) });
  // A node's term is at least the term of every entry it holds, so the new entries keep terms non-decreasing.
  const term = hardState.term;
  const last = held.length > 0 ? held[held.length - 1]! : undefined;
  const lastIndex = last?.index ?? snapshot.index;
  assert(last === undefined || last.term <= term, `entry ${last?.index} has term ${last?.term} above the hard state's ${term}`);
  assert(hardState.commit <= lastIndex, `commit ${hardState.commit} beyond the last index ${lastIndex}`);
  const entries = changes.map((cc, i): Entry => ({ term, index: lastIndex + 1 + i, type: EntryType.ConfChange, data: encodeConfChange(cc) }));
  return {
    entries,
    hardState: { term, vote: hardState.vote, commit: lastIndex + entries.length },
    removed,
    promotedSelf,
    adopted: lastIndex - hardState.commit,
  };
}

/** The member record the entry that added `id` carried (the apply path needs a member in every context). */
function contextOf(id: bigint, held: readonly Entry[]): Uint8Array {
  let member: Member = { id, name: '', peerUrls: [], clientUrls: [], isLearner: false };
  for (const e of held) {
    if (e.type !== EntryType.ConfChange) continue;
    const cc = decodeConfChange(e.data);
    if (cc.nodeId === id && cc.type !== 'removeNode' && cc.context.length > 0) member = decodeConfChangeContext(cc.context).member;
  }
  return encodeConfChangeContext({ id: 0n, member });
}

/** What the reset needs from the WAL: one durable save of entries and hard state together. */
export interface ResetLog {
  save(request: { hardState: HardState; entries: readonly Entry[] }): Promise<void>;
}

/**
 * Plans the reset and makes it durable before Raft starts; returns the log Raft must start from. The caller
 * passes the WAL's recovered state and uses the returned entries and hard state in its place.
 */
export async function resetToSingleMember(
  wal: ResetLog,
  recovered: ResetInput,
  self: Member,
  logger: Logger,
): Promise<{ hardState: HardState; entries: Entry[] }> {
  const plan = planClusterReset(recovered, self);
  if (plan === undefined) {
    logger.info('cluster reset: this member is already the only voter; nothing to change', { member: self.id.toString(16) });
    return { hardState: recovered.hardState, entries: [...recovered.entries] };
  }
  if (plan.adopted > 0) {
    logger.warn('cluster reset: committing the log entries past the recorded commit index', { count: plan.adopted, after: recovered.hardState.commit });
  }
  await wal.save({ hardState: plan.hardState, entries: plan.entries });
  logger.warn('cluster reset: this member is now the only member of its cluster', {
    member: self.id.toString(16),
    removed: plan.removed.map((id) => id.toString(16)),
    promotedSelf: plan.promotedSelf,
    commit: plan.hardState.commit,
  });
  return { hardState: plan.hardState, entries: [...recovered.entries, ...plan.entries] };
}

/**
 * k3s's words once the reset is applied (pkg/etcd/etcd.go); the data directory is ours, not k3s's
 * `${datadir}/server/db`.
 */
export function clusterResetDoneMessage(): string {
  return 'Managed etcd cluster membership has been reset, restart without --cluster-reset flag now. ' +
    'Backup and delete the data directory (--data-dir) on each peer etcd server and rejoin the nodes';
}

/** What waitForReset reads from the running member. */
export interface ResetProgress {
  isLeader(): boolean;
  memberCount(): number;
  applied(): number;
}

/**
 * k3s exits only once the reset is in effect: this member leads a one-member cluster and has applied the
 * reset entries. Polls (the CLI's concern, outside the deterministic core) until then or the deadline.
 */
export async function waitForReset(p: ResetProgress, commit: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(p.isLeader() && p.memberCount() === 1 && p.applied() >= commit)) {
    if (Date.now() > deadline) throw new Error(`cluster reset not in effect after ${timeoutMs} ms (leader ${p.isLeader()}, members ${p.memberCount()}, applied ${p.applied()} of ${commit})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The member the CLI started with forceNewCluster (main's RunningMember is one). */
export interface ResetMember {
  readonly server: Pick<EtcdServer, 'driver' | 'isLeader' | 'state' | 'applied'>;
  close(): Promise<void>;
}

/**
 * k3s's --cluster-reset after the member started with forceNewCluster: wait until the reset is in effect, stop
 * cleanly, tell the operator to restart without the flag. Returns the process exit code.
 */
export async function finishClusterReset(member: ResetMember, logger: Logger, timeoutMs = clusterResetApplyMsMax): Promise<number> {
  const commit = member.server.driver.status().commit;
  const progress: ResetProgress = {
    isLeader: () => member.server.isLeader,
    memberCount: () => member.server.state.membership.size,
    applied: () => member.server.applied,
  };
  try {
    await waitForReset(progress, commit, timeoutMs);
  } catch (error) {
    logger.error('cluster reset failed', { error: (error as Error).message });
    await member.close();
    return 1;
  }
  await member.close();
  logger.info(clusterResetDoneMessage());
  return 0;
}
