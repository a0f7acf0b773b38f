/**
 * Witness members: voters that hold no data (TiKV's "witness" peers, Oracle's witness replicas). Two data
 * members and a witness survive the loss of either data member, while the witness needs no store at all.
 *
 * A witness persists entries and its hard state and acknowledges appends like any voter, so it counts toward
 * commit and election quorums. It never applies entries (its driver applies only conf changes, to know the
 * configuration), answers no proposal and no ReadIndex, and never sends a snapshot: it has no state to send.
 *
 * Its log stays small. A data leader tells each witness, on every heartbeat, an index that is committed and
 * durable on every data voter (`Message.dataDurableIndex`): no data voter can need those entries from the
 * witness any more, so the witness drops them (Ready.releaseLog). A witness behind the data leader's
 * compacted log gets a snapshot without data: it only moves the start of its log.
 *
 * The hard case. Data voters a and b, witness w; a leads, b falls behind, a commits entries with w's acks
 * and dies. b cannot win w's vote (w's log is newer), and b alone is no quorum. So w campaigns and may win,
 * but only to hand its log over: as leader it appends nothing (no entry of its term, so it never commits
 * anything), serves nobody, replicates its log to the data voters, and the first data voter whose log then
 * matches its own gets MsgTimeoutNow. That voter wins the next term with w's vote and commits everything
 * with its own no-op. A witness that finds no data voter to hand over to within an election timeout steps
 * down (it never stays leader); one that needs entries it dropped cannot help, and waits for a data leader.
 *
 * Worked example (a, b data; w witness): a leads in term 2, log 1..9 on a and w, b holds 1..5.
 *   a dies.  b: pre-vote (term 3, last 5@2) → w refuses (its log ends 9@2).
 *   w: pre-vote → b grants (w's log is newer: otherwise b refuses a witness, and wins itself); vote term 3 →
 *   b grants; w leads term 3, appends nothing.
 *   w → b: MsgApp(prev 9) rejected with hint 5; MsgApp(prev 5, entries 6..9) → b acks 9 = w's last index.
 *   w → b: MsgTimeoutNow. b campaigns in term 4 (a transfer: no pre-vote, leases ignored); w grants.
 *   b leads term 4, appends its no-op at 10, which w acknowledges: 1..10 are committed, b serves.
 */
import type { Progress } from './progress.js';
import type { Raft } from './raft.js';
import { EntryType, MessageType, noNode } from './types.js';
import type { NodeId, SnapshotMeta } from './types.js';

/** Is this node a witness in the configuration it has applied? */
export function isWitness(r: Raft): boolean {
  return r.conf.isWitness(r.id);
}

/**
 * Data leader: the index to tell witnesses. Committed (so no leader will ever truncate it) and durable on
 * every data voter (the leader's own match is its stable index), so no data voter needs it from a witness.
 */
export function dataDurableIndex(r: Raft): number {
  let index = r.log.committed;
  for (const id of r.conf.dataVoters()) index = Math.min(index, r.progress.get(id)?.match ?? 0);
  return index;
}

/**
 * Witness leader: `to` answered. Once a data voter's log matches ours to the end, it gets MsgTimeoutNow (again
 * on later answers, in case it was lost); one heir at a time, until we step down.
 */
export function witnessMaybeHandOff(r: Raft, to: NodeId, pr: Progress): void {
  if (!r.conf.isVoter(to) || r.conf.isWitness(to) || pr.match !== r.log.lastIndex) return;
  if (r.leadTransferee !== noNode && r.leadTransferee !== to) return;
  if (r.leadTransferee === noNode) r.trace(`witness: ${to} holds our whole log, handing leadership to it`);
  r.leadTransferee = to;
  r.send(r.newMessage(MessageType.TimeoutNow, to));
}

/**
 * Witness: a data leader says every data voter holds `upTo` durably. Drop our entries up to it, but only
 * entries we have applied (their conf changes are in our configuration) and hold durably ourselves. The new
 * log start records our configuration, so no conf change may lie between it and what we handed out for
 * applying (the configuration would then be a later one): then we wait for a later heartbeat.
 */
export function witnessRelease(r: Raft, upTo: number): void {
  if (!isWitness(r) || r.cfg.unsafeTestFaults?.witnessNeverReleases === true) return;
  const log = r.log;
  const to = Math.min(upTo, log.applied, log.stable, log.committed);
  if (to < log.firstIndex) return;
  for (const e of log.between(to + 1, log.committedHandedOut)) if (e.type === EntryType.ConfChange) return;
  const meta: SnapshotMeta = { index: to, term: log.term(to)!, confState: r.conf.toConfState() };
  log.releaseTo(meta);
  r.releasedLog = meta;
}

/**
 * A data voter refuses its (pre-)vote to a witness whose log is not strictly newer than its own: the witness
 * would only hand leadership to a data voter again, so it may win only when it holds entries data voters
 * lack. When the logs are equal the data voter wins the election itself, and the two never split the vote.
 */
export function refusesWitnessCandidate(r: Raft, candidate: NodeId, lastIndex: number, lastTerm: number): boolean {
  if (isWitness(r) || !r.conf.isWitness(candidate)) return false;
  const newer = lastTerm > r.log.lastTerm || (lastTerm === r.log.lastTerm && lastIndex > r.log.lastIndex);
  return !newer;
}

/**
 * A witness pre-candidate refused a data voter's pre-vote because that voter's log is behind ours: the voter
 * has lost its leader too, so it would now grant ours. Ask again at once instead of after another election
 * timeout (the hard case then takes one timeout, not two). A pre-vote changes no term: this disturbs nobody.
 */
export function witnessShouldRetryPreVote(r: Raft, from: NodeId, logBehind: boolean): boolean {
  return isWitness(r) && r.role === 'preCandidate' && logBehind && r.conf.isVoter(from) && !r.conf.isWitness(from);
}

/** Witness leader: it leads only to hand over; past this many ticks without a successor it steps down. */
export function witnessLeadTicksMax(r: Raft): number {
  return r.cfg.electionTicks;
}
