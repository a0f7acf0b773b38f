/**
 * Leader: heartbeats and CheckQuorum on tick, proposals, acknowledgements, ReadIndex, leadership transfer.
 */
import { Progress } from './progress.js';
import type { Raft } from './raft.js';
import { countActive, quorumSize } from './quorum.js';
import { roundContext, roundOf } from './read-only.js';
import { appendEntries, bcastAppend, bcastHeartbeat, maybeCommit, maybeSendAppend, sendAppendLoop } from './replication.js';
import { EntryType, MessageType, noNode } from './types.js';
import type { Message, NodeId, ProposeResult } from './types.js';
import { isWitness, witnessLeadTicksMax, witnessMaybeHandOff } from './witness.js';

const noData = new Uint8Array(0);

/** Heartbeat rounds without ack progress before a replicating follower is probed again (lost MsgApps). */
export const replicateStallHeartbeats = 3;

/** Election timeouts of heartbeats a snapshot may stay unacknowledged before it is sent again. */
export const snapshotStallElectionTimeouts = 4;

/** ReadIndex requests a new leader holds until it committed an entry of its term; more are dropped. */
export const pendingReadsBeforeCommitMax = 1024;

/** Called by Raft.becomeLeader once the role is set: fresh progress for all, then the term's no-op entry. */
export function becomeLeader(r: Raft): void {
  const last = r.log.lastIndex;
  for (const id of r.conf.members()) {
    const pr = new Progress(last + 1, r.conf.isLearner(id), r.cfg.maxInflightMsgs);
    if (id === r.id) {
      // Our own entries count toward commit only once durable (onPersisted moves match).
      pr.match = r.log.stable;
      pr.state = 'replicate';
      pr.recentActive = true;
    }
    r.progress.set(id, pr);
  }
  // Conservatively treat any conf change in our log as pending until we applied up to here.
  r.pendingConfIndex = last;
  // The no-op entry of our term: committing it commits everything before it (figure 8). A witness appends
  // nothing: it leads only to replicate its log to a data voter, who commits it (src/raft/witness.ts).
  if (!isWitness(r)) appendEntries(r, [{ type: EntryType.Normal, data: noData }], true);
  bcastAppend(r);
}

/**
 * CheckQuorum, measured per tick: the leader steps down as soon as fewer than a quorum of voters were heard
 * from within the last election timeout (a grace of one election timeout after winning). etcd checks once
 * per election timeout, which can take up to two timeouts to notice a lost quorum.
 */
export function tickLeader(r: Raft): void {
  r.heartbeatElapsed++;
  r.electionElapsed++;
  r.leaderTicks++;
  for (const [id, pr] of r.progress) {
    pr.recentActive = id === r.id || r.leaderTicks - pr.lastActiveTick < r.cfg.electionTicks;
  }
  if (r.cfg.checkQuorum && r.leaderTicks >= r.cfg.electionTicks && !quorumActive(r)) {
    r.trace('stepped down: no quorum heard within an election timeout');
    r.becomeFollower(r.term, noNode);
    return;
  }
  if (isWitness(r) && r.leaderTicks >= witnessLeadTicksMax(r)) {
    r.trace('witness stepped down: no data voter took over within an election timeout');
    r.becomeFollower(r.term, noNode);
    return;
  }
  if (r.electionElapsed >= r.cfg.electionTicks) {
    r.electionElapsed = 0;
    if (r.leadTransferee !== noNode) {
      r.trace(`leader transfer to ${r.leadTransferee} timed out`);
      r.leadTransferee = noNode;
    }
  }
  if (r.heartbeatElapsed >= r.cfg.heartbeatTicks) {
    r.heartbeatElapsed = 0;
    const round = r.readOnly.lastPendingRound();
    bcastHeartbeat(r, round === undefined ? undefined : roundContext(round));
  }
}

function markActive(r: Raft, pr: Progress): void {
  pr.recentActive = true;
  pr.lastActiveTick = r.leaderTicks;
}

function quorumActive(r: Raft): boolean {
  const voters = r.conf.voters;
  const active = countActive(voters, (id) => id === r.id || r.progress.get(id)?.recentActive === true);
  return active >= quorumSize(voters.length);
}

export function stepLeader(r: Raft, m: Message): void {
  // A witness leader serves nobody: forwarded proposals, reads and transfer requests are dropped (the data
  // members retry them with the leader that follows).
  const serves = !isWitness(r);
  switch (m.type) {
    case MessageType.Prop: {
      // Forwarded proposals: normal entries only (conf changes must be proposed on the leader itself).
      const items = m.entries.filter((e) => e.type === EntryType.Normal);
      if (items.length > 0 && serves) leaderPropose(r, items);
      return;
    }
    case MessageType.ReadIndex:
      if (serves) leaderReadIndex(r, m.from, m.context ?? noData);
      return;
    case MessageType.TransferLeader:
      if (m.context !== undefined && m.context.byteLength === 8 && serves) leaderTransfer(r, decodeNodeId(m.context));
      return;
    case MessageType.AppResp:
      handleAppResp(r, m);
      return;
    case MessageType.HeartbeatResp:
      handleHeartbeatResp(r, m);
      return;
    default:
      return;
  }
}

export function leaderPropose(r: Raft, items: readonly { type: EntryType; data: Uint8Array }[]): ProposeResult {
  if (r.leadTransferee !== noNode || isWitness(r)) return { ok: false, error: 'proposalDropped' };
  if (!r.progress.has(r.id)) return { ok: false, error: 'proposalDropped' }; // removed from the config
  if (!appendEntries(r, items, false)) return { ok: false, error: 'proposalDropped' };
  r.bcastPending = true;
  return { ok: true };
}

function handleAppResp(r: Raft, m: Message): void {
  const pr = r.progress.get(m.from);
  if (pr === undefined) return;
  markActive(r, pr);
  if (m.reject) {
    let hint = m.rejectHint;
    if ((m.logTermHint ?? 0) > 0) hint = r.log.findConflictByTerm(m.rejectHint, m.logTermHint!).index;
    if (pr.maybeDecrTo(m.index, hint)) maybeSendAppend(r, m.from, true);
    return;
  }
  const probeAck = pr.state === 'probe' && pr.match === m.index;
  if (!pr.maybeUpdate(m.index) && !probeAck) return;
  if (pr.state === 'probe') {
    pr.becomeReplicate();
  } else if (pr.state === 'snapshot' && pr.match + 1 >= r.log.firstIndex) {
    // The snapshot (or enough of the log) landed: resume normal replication after it.
    pr.becomeProbe();
    pr.becomeReplicate();
  } else if (pr.state === 'replicate') {
    pr.inflights.freeLE(m.index);
  }
  if (maybeCommit(r)) onCommitAdvanced(r);
  sendAppendLoop(r, m.from);
  if (isWitness(r)) witnessMaybeHandOff(r, m.from, pr);
  else if (m.from === r.leadTransferee && pr.match === r.log.lastIndex) sendTimeoutNow(r, m.from);
}

function handleHeartbeatResp(r: Raft, m: Message): void {
  const pr = r.progress.get(m.from);
  if (pr === undefined) return;
  markActive(r, pr);
  catchUpOnHeartbeat(r, m.from, pr);
  if (isWitness(r)) witnessMaybeHandOff(r, m.from, pr);
  const round = roundOf(m.context);
  if (round === undefined) return;
  const acks = r.readOnly.recvAck(m.from, round);
  if (acks === undefined) return;
  const voters = r.conf.voters;
  if (countActive(voters, (id) => acks.has(id)) < quorumSize(voters.length)) return;
  for (const rs of r.readOnly.advance(round)) answerRead(r, rs.from, rs.index, rs.context);
}

/**
 * Heartbeat responses drive recovery from lost MsgApps. Probe: send the next probe. Replicate: while acks
 * keep coming nothing extra is sent (etcd sends an empty MsgApp on every heartbeat response, which under
 * latency provokes spurious rejections and resends); only after `replicateStallHeartbeats` responses without
 * any ack progress, while behind, do we fall back to probing from the last acknowledged index.
 */
function catchUpOnHeartbeat(r: Raft, to: NodeId, pr: Progress): void {
  const behind = pr.match < r.log.lastIndex;
  if (pr.state === 'probe') {
    pr.probeSent = false;
    if (behind) maybeSendAppend(r, to, true);
    return;
  }
  if (pr.state === 'snapshot') {
    // The transport reports how a snapshot send ended (reportSnapshot); if that report is lost, do not wait
    // forever: after several election timeouts of heartbeats without the snapshot landing, send it again.
    const limit = snapshotStallElectionTimeouts * Math.ceil(r.cfg.electionTicks / r.cfg.heartbeatTicks);
    if (++pr.stalledHeartbeats >= limit) {
      r.trace(`snapshot to ${to} not acknowledged after ${limit} heartbeats: retrying`);
      pr.pendingSnapshot = 0;
      pr.becomeProbe();
      maybeSendAppend(r, to, true);
    }
    return;
  }
  if (behind && ++pr.stalledHeartbeats >= replicateStallHeartbeats) {
    pr.becomeProbe();
    maybeSendAppend(r, to, true);
    return;
  }
  sendAppendLoop(r, to);
}

/** The commit index moved: tell followers, and serve reads that waited for a commit in our term. */
export function onCommitAdvanced(r: Raft): void {
  r.bcastPending = true;
  if (r.pendingReads.length > 0 && committedInTerm(r)) {
    const waiting = r.pendingReads;
    r.pendingReads = [];
    for (const m of waiting) leaderReadIndex(r, m.from, m.context ?? noData);
  }
}

export function committedInTerm(r: Raft): boolean {
  return r.log.term(r.log.committed) === r.term;
}

/**
 * ReadIndex on the leader: the read point is the commit index now; it is safe once a quorum confirms we are
 * still leader (heartbeat round carrying the context). Before we committed in our term, our commit index
 * may lag the true one, so requests wait (bounded) until then.
 */
export function leaderReadIndex(r: Raft, from: NodeId, context: Uint8Array): void {
  if (isWitness(r)) return; // a witness answers no read: it never commits in its term anyway
  if (!committedInTerm(r)) {
    if (r.pendingReads.length < pendingReadsBeforeCommitMax) {
      const m = r.newMessage(MessageType.ReadIndex, r.id);
      m.from = from;
      m.context = context;
      r.pendingReads.push(m);
    }
    return;
  }
  const voters = r.conf.voters;
  if (voters.length === 1 && voters[0] === r.id) {
    answerRead(r, from, r.log.committed, context);
    return;
  }
  const rs = r.readOnly.add(r.log.committed, from, context);
  if (rs === undefined) return;
  r.readOnly.recvAck(r.id, rs.round);
  bcastHeartbeat(r, roundContext(rs.round));
}

function answerRead(r: Raft, from: NodeId, index: number, context: Uint8Array): void {
  if (from === r.id) {
    r.readStates.push({ index, context });
    return;
  }
  const resp = r.newMessage(MessageType.ReadIndexResp, from);
  resp.index = index;
  resp.context = context;
  r.send(resp);
}

/**
 * Hand leadership to `transferee`: catch it up, then MsgTimeoutNow. Ignored for self, learners, strangers and
 * witnesses (a witness would only hand it back), and on a witness leader (it picks its successor itself).
 */
export function leaderTransfer(r: Raft, transferee: NodeId): void {
  const pr = r.progress.get(transferee);
  if (transferee === r.id || pr === undefined || pr.isLearner || r.conf.isWitness(transferee) || isWitness(r)) {
    r.trace(`ignored leader transfer to ${transferee}`);
    return;
  }
  if (r.leadTransferee === transferee) return;
  // A new transfer replaces a pending one; the election timeout bounds it (see tickLeader).
  r.electionElapsed = 0;
  r.leadTransferee = transferee;
  r.trace(`transferring leadership to ${transferee}`);
  if (pr.match === r.log.lastIndex) sendTimeoutNow(r, transferee);
  else maybeSendAppend(r, transferee, true);
}

function sendTimeoutNow(r: Raft, to: NodeId): void {
  r.send(r.newMessage(MessageType.TimeoutNow, to));
}

export function encodeNodeId(id: NodeId): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, id);
  return out;
}

export function decodeNodeId(b: Uint8Array): NodeId {
  return new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(0);
}
