/**
 * Membership changes on the leader (validation before proposing) and on every node (applying a committed
 * change). One change at a time, single-server (Ongaro 2014 §4.1), so no joint consensus is needed.
 */
import { encodeConfChange } from './conf.js';
import { Progress } from './progress.js';
import type { Raft } from './raft.js';
import { countActive, quorumSize } from './quorum.js';
import { bcastAppend, maybeCommit } from './replication.js';
import { committedInTerm, leaderPropose, onCommitAdvanced } from './step-leader.js';
import { EntryType, MessageType, noNode } from './types.js';
import { isWitness } from './witness.js';
import type { ConfChange, ConfState, ProposeError, ProposeResult } from './types.js';

/**
 * A learner may be promoted once its match is within this many entries of the leader's last index, and
 * within 10% of it for short logs (so a learner that has replicated nothing is never "caught up").
 * etcd's server uses "match ≥ 90% of the leader's"; an absolute cap keeps the lag bounded on long logs.
 */
export const learnerPromoteLagEntriesMax = 1000;

export function proposeConfChange(r: Raft, cc: ConfChange): ProposeResult {
  if (r.role !== 'leader') return { ok: false, error: 'notLeader' };
  if (r.leadTransferee !== noNode || isWitness(r)) return { ok: false, error: 'proposalDropped' };
  if (r.pendingConfIndex > r.log.applied) return { ok: false, error: 'confChangePending' };
  if (!committedInTerm(r)) return { ok: false, error: 'leaderNotCommittedInTerm' };
  const error = validate(r, cc);
  if (error !== undefined) return { ok: false, error };
  const res = leaderPropose(r, [{ type: EntryType.ConfChange, data: encodeConfChange(cc) }]);
  if (res.ok) r.pendingConfIndex = r.log.lastIndex;
  return res;
}

function validate(r: Raft, cc: ConfChange): ProposeError | undefined {
  const id = cc.nodeId;
  const conf = r.conf;
  const active = (x: bigint): boolean => x === r.id || r.progress.get(x)?.recentActive === true;
  switch (cc.type) {
    case 'addVoter':
    case 'addWitness': {
      if (conf.isVoter(id) || (cc.type === 'addWitness' && conf.isLearner(id))) return 'memberExists';
      const promoting = conf.isLearner(id);
      if (promoting && !learnerCaughtUp(r, id)) return 'learnerNotCaughtUp';
      // etcd's strict reconfig check: the new configuration's quorum must be met by voters active now.
      const members = conf.voters.length + 1;
      const started = countActive(conf.voters, active) + (promoting && active(id) ? 1 : 0);
      // etcd's exception: growing a one-member cluster (e.g. restoring from a backup) is allowed.
      if (!promoting && conf.voters.length === 1 && started === 1) return undefined;
      return started < quorumSize(members) ? 'wouldLoseQuorum' : undefined;
    }
    case 'addLearner':
      return conf.isMember(id) ? 'memberExists' : undefined;
    case 'removeNode': {
      if (!conf.isMember(id)) return 'memberNotFound';
      if (!conf.isVoter(id)) return undefined;
      const remaining = conf.voters.filter((x) => x !== id);
      if (!conf.isWitness(id) && conf.witnesses.length > 0 && conf.dataVoters().length === 1) return 'noDataVoter';
      const started = countActive(remaining, active);
      return started < quorumSize(remaining.length) ? 'wouldLoseQuorum' : undefined;
    }
  }
}

/**
 * A leader that removed itself leaves no one to tell the others that its removal committed; in a two-voter
 * cluster the survivor could then never be elected (its configuration still needs the removed voter).
 * So before stepping down it broadcasts its commit index and asks the most up-to-date remaining data voter to
 * campaign at once (MsgTimeoutNow), while it can still answer that vote (it answers as a non-member); a
 * witness would only hand leadership back.
 */
function handOff(r: Raft): void {
  bcastAppend(r);
  let heir: bigint | undefined;
  let best = -1;
  for (const id of r.conf.dataVoters()) {
    const pr = r.progress.get(id);
    if (pr !== undefined && pr.match > best) {
      best = pr.match;
      heir = id;
    }
  }
  if (heir !== undefined && best === r.log.lastIndex) r.send(r.newMessage(MessageType.TimeoutNow, heir));
}

export function learnerCaughtUp(r: Raft, id: bigint): boolean {
  const pr = r.progress.get(id);
  if (pr === undefined || pr.match === 0) return false;
  const last = r.log.lastIndex;
  const lag = Math.min(learnerPromoteLagEntriesMax, Math.floor(last / 10));
  return pr.match >= last - lag;
}

/** Apply a committed change (every node, in log order). The leader tracks new members and may step down. */
export function applyConfChange(r: Raft, cc: ConfChange): ConfState {
  r.conf.apply(cc);
  if (r.role !== 'leader') return r.conf.toConfState();
  if (!r.conf.isMember(r.id)) {
    // The leader removed itself: it stops leading; it never campaigns again (not promotable).
    r.trace('removed from the configuration: stepping down');
    handOff(r);
    r.becomeFollower(r.term, noNode);
    return r.conf.toConfState();
  }
  const last = r.log.lastIndex;
  for (const id of r.conf.members()) {
    const pr = r.progress.get(id);
    if (pr === undefined) {
      const fresh = new Progress(last + 1, r.conf.isLearner(id), r.cfg.maxInflightMsgs);
      // A new member counts as active, or CheckQuorum could depose us before it had a chance to answer.
      fresh.recentActive = true;
      fresh.lastActiveTick = r.leaderTicks;
      r.progress.set(id, fresh);
    } else {
      pr.isLearner = r.conf.isLearner(id);
    }
  }
  for (const id of [...r.progress.keys()]) if (!r.conf.isMember(id)) r.progress.delete(id);
  if (r.leadTransferee !== noNode && !r.conf.isVoter(r.leadTransferee)) r.leadTransferee = noNode;
  // The quorum changed: something may now be committed; new members need entries.
  maybeCommit(r);
  onCommitAdvanced(r);
  return r.conf.toConfState();
}
