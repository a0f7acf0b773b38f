/**
 * The Raft state machine: state, role transitions, ticks, elections and the term rules every message passes
 * through. Role-specific handling lives in step-follower.ts / step-candidate.ts / step-leader.ts, leader-side
 * replication in replication.ts, membership in membership.ts. Internal to src/raft: RawNode is the public API.
 * Fields are public so the role handlers (free functions) can work on them; nothing outside src/raft sees them.
 */
import { assert } from '../base/assert.js';
import { equalBytes } from '../base/bytes.js';
import { MemberConfig, decodeConfChange } from './conf.js';
import { ReadOnlyQueue } from './read-only.js';
import { RaftLog } from './raft-log.js';
import type { Progress } from './progress.js';
import { voteResult } from './quorum.js';
import { stepCandidate } from './step-candidate.js';
import { stepFollower } from './step-follower.js';
import { stepLeader, tickLeader, becomeLeader } from './step-leader.js';
import { EntryType, MessageType, noNode } from './types.js';
import type { Message, NodeId, RaftConfig, ReadState, Role, SnapshotMeta } from './types.js';
import { refusesWitnessCandidate, witnessShouldRetryPreVote } from './witness.js';

/** ReadIndex requests a leader holds before answering; more are dropped (the server times them out). */
export const raftPendingReadsMax = 10_000;

/** MsgVote context marking a leader-transfer election: voters ignore their leader lease for it. */
export const transferContext = new Uint8Array([0x74, 0x72, 0x61, 0x6e, 0x73]); // "trans"

export type StepFn = (r: Raft, m: Message) => void;

export class Raft {
  readonly id: NodeId;
  readonly cfg: RaftConfig;
  term = 0;
  vote: NodeId = noNode;
  lead: NodeId = noNode;
  role: Role = 'follower';
  readonly log: RaftLog;
  conf: MemberConfig;
  /** Leader only: every member's progress, self included. */
  readonly progress = new Map<NodeId, Progress>();
  readonly votes = new Map<NodeId, boolean>();
  electionElapsed = 0;
  heartbeatElapsed = 0;
  /** Leader: ticks since it became leader (activity of followers is measured against it). */
  leaderTicks = 0;
  randomizedElectionTimeout = 0;
  leadTransferee: NodeId = noNode;
  /** Leader: index of the latest conf change it proposed (or its last index at election). */
  pendingConfIndex = 0;
  uncommittedBytes = 0;
  /**
   * Leader: new entries or a new commit index not yet broadcast. Proposals and acks only set it; ready()
   * broadcasts once, so every proposal between two Readies travels in one MsgApp per follower.
   */
  bcastPending = false;
  readonly readOnly = new ReadOnlyQueue(raftPendingReadsMax);
  /** Leader: ReadIndex requests that arrived before it committed an entry of its term. */
  pendingReads: Message[] = [];
  readStates: ReadState[] = [];
  /** Witness: the log start it moved to and has not yet handed out (Ready.releaseLog). */
  releasedLog: SnapshotMeta | undefined;
  msgs: Message[] = [];
  msgsAfterPersist: Message[] = [];
  /** Candidate: its vote for itself counts only once that hard state is durable (see raw-node.ts). */
  selfVoteTerm = 0;
  /** Scratch for commit computation (no allocation per ack). */
  readonly scratch: number[] = [];
  #step: StepFn = stepFollower;

  constructor(cfg: RaftConfig, log: RaftLog, conf: MemberConfig) {
    this.id = cfg.id;
    this.cfg = cfg;
    this.log = log;
    this.conf = conf;
  }

  // ---- messages ----

  newMessage(type: MessageType, to: NodeId): Message {
    return {
      type,
      from: this.id,
      to,
      term: this.term,
      logTerm: 0,
      index: 0,
      entries: [],
      commit: 0,
      reject: false,
      rejectHint: 0,
    };
  }

  /** Queue a message; those acknowledging unpersisted state wait for persistence (see Ready in types.ts). */
  send(m: Message): void {
    assert(m.to !== this.id, `message ${m.type} to self`);
    if (needsPersist(m) && !(m.type === MessageType.VoteResp && this.cfg.unsafeTestFaults?.voteBeforePersist)) {
      this.msgsAfterPersist.push(m);
    } else {
      this.msgs.push(m);
    }
  }

  trace(line: string): void {
    this.cfg.logger?.(`raft ${this.id} t${this.term} ${this.role}: ${line}`);
  }

  // ---- membership predicates ----

  /** May this node campaign? Only voters (learners too under the learnersVote fault), never while restoring. */
  promotable(): boolean {
    if (this.log.pendingSnapshot !== undefined) return false;
    if (this.conf.isVoter(this.id)) return true;
    return this.cfg.unsafeTestFaults?.learnersVote === true && this.conf.isLearner(this.id);
  }

  /** The ids whose votes count (learners too under the learnersVote fault). */
  votingMembers(): readonly NodeId[] {
    return this.cfg.unsafeTestFaults?.learnersVote ? this.conf.members() : this.conf.voters;
  }

  // ---- role transitions ----

  reset(term: number): void {
    if (term !== this.term) {
      assert(term > this.term, `term would decrease from ${this.term} to ${term}`);
      this.term = term;
      this.vote = noNode;
    }
    this.lead = noNode;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.leaderTicks = 0;
    this.randomizedElectionTimeout = this.cfg.electionTicks + this.cfg.rng.int(this.cfg.electionTicks);
    this.leadTransferee = noNode;
    this.votes.clear();
    this.selfVoteTerm = 0;
    this.pendingConfIndex = 0;
    this.uncommittedBytes = 0;
    this.bcastPending = false;
    this.readOnly.clear();
    this.pendingReads = [];
    this.progress.clear();
  }

  becomeFollower(term: number, lead: NodeId): void {
    this.reset(term);
    this.lead = lead;
    this.role = 'follower';
    this.#step = stepFollower;
    this.trace(`became follower, leader ${lead}`);
  }

  becomePreCandidate(): void {
    assert(this.role !== 'leader', 'leader cannot become pre-candidate');
    // PreVote: the term is not bumped and no vote is cast, so a failed pre-election disturbs nobody.
    this.#step = stepCandidate;
    this.votes.clear();
    this.selfVoteTerm = 0;
    this.lead = noNode;
    this.role = 'preCandidate';
    this.trace('became pre-candidate');
  }

  becomeCandidate(): void {
    assert(this.role !== 'leader', 'leader cannot become candidate');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.selfVoteTerm = this.term;
    this.role = 'candidate';
    this.#step = stepCandidate;
    this.trace('became candidate');
  }

  becomeLeader(): void {
    assert(this.role === 'candidate', `${this.role} cannot become leader`);
    this.reset(this.term);
    this.lead = this.id;
    this.role = 'leader';
    this.#step = stepLeader;
    becomeLeader(this);
    this.trace('became leader');
  }

  // ---- time ----

  tick(): void {
    if (this.role === 'leader') {
      tickLeader(this);
      return;
    }
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  // ---- elections ----

  hup(transfer: boolean): void {
    if (this.role === 'leader' || !this.promotable()) return;
    if (this.#hasUnappliedConfChange()) {
      this.trace('not campaigning: a committed conf change is not applied yet');
      return;
    }
    if (this.cfg.preVote && !transfer) this.campaign('preElection');
    else this.campaign(transfer ? 'transfer' : 'election');
  }

  #hasUnappliedConfChange(): boolean {
    const { applied, committed } = this.log;
    if (committed <= applied) return false;
    for (const e of this.log.between(applied + 1, committed)) if (e.type === EntryType.ConfChange) return true;
    return false;
  }

  campaign(kind: 'preElection' | 'election' | 'transfer'): void {
    let voteType: MessageType;
    let term: number;
    if (kind === 'preElection') {
      this.becomePreCandidate();
      voteType = MessageType.PreVote;
      term = this.term + 1;
      // A pre-vote changes no durable state, so our own counts at once.
      if (this.#poll(this.id, true)) return;
    } else {
      this.becomeCandidate();
      voteType = MessageType.Vote;
      term = this.term;
    }
    for (const to of this.votingMembers()) {
      if (to === this.id) continue;
      const m = this.newMessage(voteType, to);
      m.term = term;
      m.index = this.log.lastIndex;
      m.logTerm = this.log.lastTerm;
      if (kind === 'transfer') m.context = transferContext;
      this.send(m);
    }
  }

  /** Record a vote; returns true when the election concluded (won or lost). */
  #poll(from: NodeId, granted: boolean): boolean {
    if (!this.votes.has(from)) this.votes.set(from, granted);
    const result = voteResult(this.votingMembers(), this.votes);
    if (result === 'pending') return false;
    // A candidate may hold a quorum of others' grants before its own {term, vote} is durable. Leading then
    // would let it crash, restart in the old term and win the same term again with another log (sim F4):
    // it leads only once its own vote is on disk (the Raft paper persists currentTerm/votedFor first).
    if (result === 'won' && this.role === 'candidate' && this.selfVoteTerm === this.term) return false;
    if (result === 'won') {
      if (this.role === 'preCandidate') this.campaign('election');
      else this.becomeLeader();
    } else {
      this.becomeFollower(this.term, noNode);
    }
    return true;
  }

  poll(from: NodeId, granted: boolean): void {
    this.#poll(from, granted);
  }

  /** The candidate's hard state (its vote for itself) is durable: now its own vote counts. */
  onSelfVotePersisted(term: number): void {
    if (this.role === 'candidate' && this.term === term && this.selfVoteTerm === term) {
      this.selfVoteTerm = 0;
      this.#poll(this.id, true);
    }
  }

  // ---- the term rules, then the role handler ----

  step(m: Message): void {
    if (m.term > this.term && m.term > 0) {
      if (!this.#acceptHigherTerm(m)) return;
    } else if (m.term < this.term && m.term > 0) {
      this.#answerStaleTerm(m);
      return;
    }
    if (m.type === MessageType.Vote || m.type === MessageType.PreVote) {
      this.#handleVoteRequest(m);
      return;
    }
    this.#step(this, m);
  }

  /** Returns false when the message must be ignored. */
  #acceptHigherTerm(m: Message): boolean {
    const isVote = m.type === MessageType.Vote || m.type === MessageType.PreVote;
    if (isVote) {
      const force = m.context !== undefined && equalBytes(m.context, transferContext);
      // Leader lease for votes: while we hear from a live leader, a disruptive candidate is ignored. Always for
      // pre-votes ("no leader heard within the election timeout"); for real votes only with CheckQuorum, as etcd.
      const leaseApplies = this.cfg.checkQuorum || m.type === MessageType.PreVote;
      const inLease = leaseApplies && this.lead !== noNode && this.electionElapsed < this.cfg.electionTicks;
      if (!force && inLease) {
        this.trace(`ignored ${m.type} from ${m.from} at term ${m.term}: leader lease`);
        return false;
      }
    }
    if (m.type === MessageType.PreVote) return true; // a pre-vote never changes our term
    if (m.type === MessageType.PreVoteResp && !m.reject) return true; // we bump when we win the pre-election
    const fromLeader = m.type === MessageType.App || m.type === MessageType.Heartbeat || m.type === MessageType.Snap;
    this.becomeFollower(m.term, fromLeader ? m.from : noNode);
    return true;
  }

  #answerStaleTerm(m: Message): void {
    if ((this.cfg.checkQuorum || this.cfg.preVote) && (m.type === MessageType.Heartbeat || m.type === MessageType.App)) {
      // A stale leader (e.g. after a partition) learns our term and steps down; otherwise, with PreVote or
      // CheckQuorum, nobody would ever tell it.
      // It acknowledges nothing, so it need not wait for persistence.
      this.msgs.push(this.newMessage(MessageType.AppResp, m.from));
    } else if (m.type === MessageType.PreVote) {
      const resp = this.newMessage(MessageType.PreVoteResp, m.from);
      resp.reject = true;
      this.send(resp);
    }
  }

  #handleVoteRequest(m: Message): void {
    const pre = m.type === MessageType.PreVote;
    const respType = pre ? MessageType.PreVoteResp : MessageType.VoteResp;
    // Any node answers, learners and non-members included (etcd does the same): a learner may have been
    // promoted in a configuration it has not applied yet, and refusing would deadlock a cluster whose only
    // other voter is the candidate. Safety does not depend on it: a candidate counts only the grants of the
    // voters in its own configuration (votingMembers), so a true learner's grant never elects anyone.
    const canVote =
      this.vote === m.from || (this.vote === noNode && this.lead === noNode) || (pre && m.term > this.term);
    if (canVote && this.log.isUpToDate(m.index, m.logTerm) && !refusesWitnessCandidate(this, m.from, m.index, m.logTerm)) {
      const resp = this.newMessage(respType, m.from);
      // A grant carries the candidate's term (for a pre-vote, the term it would campaign at).
      resp.term = m.term;
      this.send(resp);
      if (!pre) {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      const resp = this.newMessage(respType, m.from);
      resp.reject = true;
      this.send(resp);
      if (pre && witnessShouldRetryPreVote(this, m.from, !this.log.isUpToDate(m.index, m.logTerm))) this.hup(false);
    }
  }

  /** Replay conf changes in (from, to] of the log into the configuration (restart after crash). */
  replayConfChanges(from: number, to: number): void {
    for (const e of this.log.between(from + 1, to)) {
      if (e.type === EntryType.ConfChange) this.conf.apply(decodeConfChange(e.data));
    }
  }
}

function needsPersist(m: Message): boolean {
  return (m.type === MessageType.AppResp || m.type === MessageType.VoteResp) && !m.reject;
}
