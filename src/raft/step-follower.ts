/** Follower message handling: accept the leader's log, forward client requests to it. */
import { MemberConfig } from './conf.js';
import type { Raft } from './raft.js';
import { MessageType, noNode } from './types.js';
import type { Message } from './types.js';
import { isWitness, witnessRelease } from './witness.js';

export function stepFollower(r: Raft, m: Message): void {
  switch (m.type) {
    case MessageType.Prop:
    case MessageType.ReadIndex:
    case MessageType.TransferLeader:
      // A witness relays nothing either: an answer would come back to it, which serves nobody.
      if (!isWitness(r)) forwardToLeader(r, m);
      return;
    case MessageType.App:
      r.electionElapsed = 0;
      r.lead = m.from;
      handleAppend(r, m);
      return;
    case MessageType.Heartbeat:
      r.electionElapsed = 0;
      r.lead = m.from;
      handleHeartbeat(r, m);
      return;
    case MessageType.Snap:
      r.electionElapsed = 0;
      r.lead = m.from;
      handleSnapshot(r, m);
      return;
    case MessageType.TimeoutNow:
      // A witness never takes leadership over from a data leader (which never asks it to).
      if (isWitness(r)) return;
      // The leader asks us to take over: campaign at once, skipping PreVote and the voters' leases.
      r.trace(`received TimeoutNow from ${m.from}`);
      r.hup(true);
      return;
    case MessageType.ReadIndexResp:
      r.readStates.push({ index: m.index, context: m.context ?? new Uint8Array(0) });
      return;
    default:
      return;
  }
}

/** Forward a local or relayed request to the leader; dropped when there is none. */
function forwardToLeader(r: Raft, m: Message): void {
  if (r.lead === noNode) {
    r.trace(`dropped ${m.type}: no leader`);
    return;
  }
  const fwd = r.newMessage(m.type, r.lead);
  fwd.term = 0; // requests carry no term: they must not affect the leader's term rules
  fwd.entries = m.entries;
  if (m.context !== undefined) fwd.context = m.context;
  r.send(fwd);
}

export function handleAppend(r: Raft, m: Message): void {
  const log = r.log;
  if (m.index < log.committed) {
    const resp = r.newMessage(MessageType.AppResp, m.from);
    resp.index = log.committed;
    r.send(resp);
    return;
  }
  const lastNew = log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
  const resp = r.newMessage(MessageType.AppResp, m.from);
  if (lastNew >= 0) {
    resp.index = lastNew;
  } else {
    // Fast backtracking: point the leader at the last index whose term could match (etcd-io/raft #1440).
    const hint = log.findConflictByTerm(Math.min(m.index, log.lastIndex), m.logTerm);
    resp.index = m.index;
    resp.reject = true;
    resp.rejectHint = hint.index;
    resp.logTermHint = hint.term;
  }
  r.send(resp);
}

export function handleHeartbeat(r: Raft, m: Message): void {
  r.log.commitTo(m.commit);
  if (m.dataDurableIndex !== undefined) witnessRelease(r, m.dataDurableIndex);
  const resp = r.newMessage(MessageType.HeartbeatResp, m.from);
  if (m.context !== undefined) resp.context = m.context;
  r.send(resp);
}

export function handleSnapshot(r: Raft, m: Message): void {
  const snap = m.snapshot;
  if (snap === undefined) return;
  const resp = r.newMessage(MessageType.AppResp, m.from);
  const { index, term } = snap.meta;
  if (index <= r.log.committed) {
    resp.index = r.log.committed;
  } else if (r.log.matchTerm(index, term)) {
    // We already hold the snapshot's point: fast-forward the commit instead of restoring.
    r.log.commitTo(index);
    resp.index = r.log.committed;
  } else {
    r.trace(`restoring snapshot at ${index} term ${term}`);
    r.log.restore(snap);
    r.conf = new MemberConfig(snap.meta.confState);
    resp.index = r.log.lastIndex;
  }
  r.send(resp);
}
