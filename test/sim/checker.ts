/**
 * The invariant checker. The driver reports every observable event (role change, append, hard state, apply,
 * snapshot restore, send, durable write, read answer) and the checker throws SimViolation the moment one of
 * Raft's safety properties breaks. Checks are incremental (O(1) or O(new entries) per event), so they can run
 * after every simulation step.
 *
 * - election safety: at most one leader per term, over the whole history;
 * - log matching: one global record per (index, term) of the entry's content hash and its predecessor's term;
 * - leader append-only: a leader never overwrites its own log in its term;
 * - leader completeness: an entry committed by the leader of term t' is in the log of every leader of a term
 *   > t' (checked when the leader is elected and when the commit is observed);
 * - commit rule (figure 8): a leader advances its commit only onto an entry of its own term;
 * - state-machine safety: the chain hash of applied entries at each index is the same on every node (so applied
 *   sequences are prefixes of one another), snapshots included;
 * - commit ≤ last index; applied ≤ commit; no truncation at or below commit; durable commit never decreases;
 * - durability before send (R6/R7): a vote grant leaves only once that vote is durable; an append ack only once
 *   the acked entry is durable;
 * - learners never vote or campaign (nodes that were never proposed as voters);
 * - linearizable ReadIndex: a read index is ≥ every index applied anywhere before the read was issued;
 * - witnesses (src/raft/witness.ts) never apply an entry, never restore state, never answer a follower's
 *   read, and never send a snapshot; their log is bounded (run-seed.ts checkWitnessLogs, at the end of a run).
 */
import type { Entry, HardState, Message, NodeId, Role } from '../../src/raft/types.js';
import { MessageType } from '../../src/raft/types.js';
import type { LogMirror } from './log-mirror.js';
import { SimViolation } from './log-mirror.js';
import { chainHash } from './state-machine.js';

export interface CheckOptions {
  /** Check vote grants and append acks against the durable state when sent. */
  sendDurability: boolean;
  /**
   * Require a leader's term to be durable before it sends appends, heartbeats, snapshots or TimeoutNow in that
   * term (FINDINGS.md F4: otherwise a crash lets it win the same term again with a different log).
   */
  leaderTermDurability: boolean;
}

interface LogRecord {
  contentHash: number;
  prevTerm: number | undefined;
}

const leaderMessages = new Set<string>([MessageType.App, MessageType.Heartbeat, MessageType.Snap, MessageType.TimeoutNow]);

export class Checker {
  readonly options: CheckOptions;
  readonly #leaderOfTerm = new Map<number, NodeId>();
  readonly #currentLeaders = new Map<NodeId, number>();
  readonly #logRecords = new Map<string, LogRecord>();
  /** For each committed index: the entry's term and the term of the leader that committed it. */
  readonly #committed: { entryTerm: number; byTerm: number }[] = [];
  readonly #stateHash: number[] = [];
  readonly #durableCommit = new Map<NodeId, number>();
  readonly #reads = new Map<string, number>();
  readonly everVoters = new Set<NodeId>();
  /** Nodes that are witnesses (every witness is also in everVoters). */
  readonly witnesses = new Set<NodeId>();
  /** Times a witness became leader (to hand its log over). */
  witnessLeaderships = 0;
  maxAppliedIndex = 0;
  leadersElected = 0;
  readsChecked = 0;

  constructor(options: Partial<CheckOptions> = {}) {
    this.options = { sendDurability: true, leaderTermDurability: true, ...options };
  }

  fail(message: string): never {
    throw new SimViolation(message);
  }

  leaderOfTerm(term: number): NodeId | undefined {
    return this.#leaderOfTerm.get(term);
  }

  /** The highest index known committed (from leaders' commit advances). */
  committedIndex(): number {
    return this.#committed.length;
  }

  onRole(id: NodeId, role: Role, term: number, log: LogMirror): void {
    if (role !== 'leader') {
      this.#currentLeaders.delete(id);
      return;
    }
    const prior = this.#leaderOfTerm.get(term);
    if (prior !== undefined && prior !== id) this.fail(`election safety: ${prior} and ${id} both leader in term ${term}`);
    if (this.witnesses.has(id)) this.witnessLeaderships++;
    this.#leaderOfTerm.set(term, id);
    this.#currentLeaders.set(id, term);
    this.leadersElected++;
    this.#checkCompleteness(id, term, log, 1);
  }

  onStopped(id: NodeId): void {
    this.#currentLeaders.delete(id);
  }

  #checkCompleteness(id: NodeId, term: number, log: LogMirror, from: number): void {
    for (let i = Math.max(from, log.snapIndex + 1); i <= this.#committed.length; i++) {
      const c = this.#committed[i - 1]!;
      if (c.byTerm >= term) continue;
      const t = log.term(i);
      if (t !== c.entryTerm) {
        this.fail(`leader completeness: leader ${id} of term ${term} has term ${t} at ${i}, committed ${c.entryTerm} in term ${c.byTerm}`);
      }
    }
  }

  /** A node handed entries to storage; `truncatedFrom` is set if they overwrote a suffix. */
  onAppend(id: NodeId, ents: readonly Entry[], log: LogMirror, truncatedFrom: number | undefined, commit: number, leaderTerm: number | undefined): void {
    if (truncatedFrom !== undefined) {
      if (truncatedFrom <= commit) this.fail(`node ${id} truncated its log at ${truncatedFrom}, at or below its commit ${commit}`);
      if (leaderTerm !== undefined) this.fail(`leader append-only: leader ${id} of term ${leaderTerm} overwrote its log at ${truncatedFrom}`);
    }
    for (const e of ents) {
      const key = `${e.index}:${e.term}`;
      const rec: LogRecord = { contentHash: chainHash(0, e), prevTerm: log.term(e.index - 1) };
      const prior = this.#logRecords.get(key);
      if (prior === undefined) {
        this.#logRecords.set(key, rec);
      } else if (prior.contentHash !== rec.contentHash || (prior.prevTerm !== undefined && rec.prevTerm !== undefined && prior.prevTerm !== rec.prevTerm)) {
        this.fail(`log matching: node ${id} has a different entry or predecessor at index ${e.index} term ${e.term}`);
      }
    }
  }

  /** A node's hard state as handed out (after appending that Ready's entries); `isLeader` as of that Ready. */
  onHardState(id: NodeId, prev: HardState, hs: HardState, log: LogMirror, isLeader: boolean): void {
    if (hs.term < prev.term) this.fail(`node ${id} term went back from ${prev.term} to ${hs.term}`);
    if (hs.commit < prev.commit) this.fail(`node ${id} commit went back from ${prev.commit} to ${hs.commit}`);
    if (hs.commit > log.lastIndex()) this.fail(`node ${id} commit ${hs.commit} > last index ${log.lastIndex()}`);
    if (!isLeader || hs.commit === prev.commit) return;
    const term = log.term(hs.commit);
    if (term !== hs.term) this.fail(`figure 8: leader ${id} of term ${hs.term} committed index ${hs.commit} of term ${term}`);
    this.#recordCommit(hs.commit, hs.term, log);
  }

  #recordCommit(commit: number, byTerm: number, log: LogMirror): void {
    const from = this.#committed.length + 1;
    for (let i = from; i <= commit; i++) {
      const t = log.term(i);
      if (t === undefined) return; // compacted on this leader: another leader recorded it, or we cannot tell
      this.#committed.push({ entryTerm: t, byTerm });
    }
    for (const [leader, term] of this.#currentLeaders) {
      if (term > byTerm) this.#pendingCompleteness.push([leader, term, from]);
    }
  }

  /** Completeness checks of current leaders against newly recorded commits; run by the driver with logs. */
  readonly #pendingCompleteness: [NodeId, number, number][] = [];
  drainCompleteness(logOf: (id: NodeId) => LogMirror | undefined): void {
    while (this.#pendingCompleteness.length > 0) {
      const [id, term, from] = this.#pendingCompleteness.pop()!;
      const log = logOf(id);
      if (log !== undefined && this.#currentLeaders.get(id) === term) this.#checkCompleteness(id, term, log, from);
    }
  }

  onApply(id: NodeId, e: Entry, hashAfter: number, commit: number): void {
    if (this.witnesses.has(id)) this.fail(`witness ${id} applied entry ${e.index}`);
    if (e.index > commit) this.fail(`node ${id} applied ${e.index} beyond its commit ${commit}`);
    this.#onStateAt(id, e.index, hashAfter);
  }

  onRestore(id: NodeId, index: number, hash: number): void {
    if (this.witnesses.has(id)) this.fail(`witness ${id} restored state at ${index}`);
    this.#onStateAt(id, index, hash);
  }

  #onStateAt(id: NodeId, index: number, hash: number): void {
    const prior = this.#stateHash[index];
    if (prior === undefined) this.#stateHash[index] = hash;
    else if (prior !== hash) this.fail(`state-machine safety: node ${id} state at index ${index} differs from another node's`);
    if (index > this.maxAppliedIndex) this.maxAppliedIndex = index;
  }

  /**
   * An operator replaced this node's data with an older backup (same member id, hard state kept): its durable
   * commit may restart lower. Nothing else is forgiven.
   */
  onDataRestored(id: NodeId): void {
    this.#durableCommit.delete(id);
  }

  onDurable(id: NodeId, hs: HardState): void {
    const prev = this.#durableCommit.get(id) ?? 0;
    if (hs.commit < prev) this.fail(`node ${id} durable commit went back from ${prev} to ${hs.commit}`);
    this.#durableCommit.set(id, hs.commit);
  }

  /**
   * A message leaves its node. `durableHs`/`durableLog` are the node's durable state now; `ackedTerm` is, for
   * an append ack, the term its log had at the acked index when the message was handed out.
   */
  onSend(m: Message, durableHs: HardState, durableLog: LogMirror, ackedTerm: number | undefined): void {
    const voter = this.everVoters.has(m.from);
    if ((m.type === MessageType.Vote || m.type === MessageType.PreVote) && !voter) {
      this.fail(`learner ${m.from} campaigned (${m.type} term ${m.term})`);
    }
    if (this.witnesses.has(m.from) && (m.type === MessageType.Snap || m.type === MessageType.ReadIndexResp)) {
      this.fail(`witness ${m.from} sent ${m.type} to ${m.to}`);
    }
    const grant = (m.type === MessageType.VoteResp || m.type === MessageType.PreVoteResp) && !m.reject;
    if (grant && !voter) this.fail(`learner ${m.from} granted a vote to ${m.to} (${m.type} term ${m.term})`);
    if (this.options.leaderTermDurability && leaderMessages.has(m.type) && durableHs.term < m.term) {
      this.fail(`leader ${m.from} sent ${m.type} in term ${m.term} before that term was durable (durable term ${durableHs.term})`);
    }
    if (!this.options.sendDurability) return;
    if (grant && m.type === MessageType.VoteResp && (durableHs.term !== m.term || durableHs.vote !== m.to)) {
      this.fail(`vote before persist: ${m.from} granted term ${m.term} to ${m.to}, durable is term ${durableHs.term} vote ${durableHs.vote}`);
    }
    if (m.type === MessageType.AppResp && !m.reject && m.index > durableLog.snapIndex) {
      if (durableLog.term(m.index) !== ackedTerm) {
        this.fail(`ack before persist: ${m.from} acked index ${m.index} to ${m.to}, durable last index ${durableLog.lastIndex()}`);
      }
    }
  }

  onReadIssued(ctx: string): void {
    this.#reads.set(ctx, this.maxAppliedIndex);
  }

  /** Answered reads: context → node and index (the first answer). */
  readonly answered = new Map<string, { id: NodeId; index: number }>();

  onReadState(id: NodeId, ctx: string, index: number): void {
    if (!this.answered.has(ctx)) this.answered.set(ctx, { id, index });
    const bound = this.#reads.get(ctx);
    if (bound === undefined) return;
    this.readsChecked++;
    if (index < bound) this.fail(`stale read: node ${id} answered read ${ctx} at index ${index}, but ${bound} was applied before it was issued`);
  }
}
