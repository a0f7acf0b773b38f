/**
 * RawNode: the one public API of the Raft core. Pure, synchronous, deterministic: it does no I/O, reads no
 * clock and draws randomness only from config.rng. The driver (server or simulator) turns time into tick()s,
 * delivers messages with step(), and carries out what ready() hands it (see Ready in types.ts).
 *
 * Persistence and the candidate's own vote. MsgVote requests leave at once (they carry only the candidate's
 * term and log position), but the candidate counts its vote for itself only once the Ready holding
 * {term, vote: self} is acknowledged by onPersisted. Counting it earlier is unsafe with async persistence: a
 * candidate could win with peers' votes, crash before its vote is durable, restart in the old term and vote
 * for a rival in the same term, giving two leaders of one term. Votes we grant to others leave only after
 * persistence (messagesAfterPersist); pre-votes change no durable state and count at once.
 *
 * Bootstrap. A brand-new node (empty log and snapshot) given `initialConfState` writes one ConfChange entry
 * per member at term 1, indexes 1..n, already committed (etcd's Bootstrap): the configuration then lives in
 * the log, so restarts replay it. Nodes bootstrapped with the same initial configuration hold identical
 * entries. A node joining an existing cluster starts with no initialConfState and learns the configuration
 * from the leader. On restart, the core replays conf changes in (snapshot.index, applied] itself; those
 * after `applied` come back as committed entries for the application to apply (applyConfChange is
 * idempotent). After a restart, call compact() with the latest snapshot so lagging followers can get it.
 */
import { assert } from '../base/assert.js';
import { MemberConfig, encodeConfChange } from './conf.js';
import { applyConfChange, proposeConfChange } from './membership.js';
import { Raft } from './raft.js';
import { RaftLog } from './raft-log.js';
import { bcastAppend, maybeCommit } from './replication.js';
import { isWitness } from './witness.js';
import { encodeNodeId, leaderPropose, leaderReadIndex, leaderTransfer, onCommitAdvanced } from './step-leader.js';
import { EntryType, MessageType, noNode } from './types.js';
import type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  Message,
  PersistAck,
  ProposeResult,
  RaftBootstrap,
  RaftConfig,
  Ready,
  SoftState,
  Status,
  Snapshot,
} from './types.js';

export class RawNode {
  readonly #r: Raft;
  #readySeq = 0;
  #lastAckSeq = 0;
  #prevSoft: SoftState;
  #prevHard: HardState;
  /** The Ready that carried the candidate's own vote: counted once that Ready is durable. */
  #selfVote: { term: number; seq: number } | undefined;
  /** A restored snapshot handed out: it counts as applied once durable. */
  #snapshotHanded: { index: number; seq: number } | undefined;

  constructor(config: RaftConfig, bootstrap: RaftBootstrap) {
    validateConfig(config);
    const { hardState, snapshot, entries } = bootstrap;
    const log = new RaftLog(snapshot, entries, hardState.commit, bootstrap.applied, config.applyUnstable === true);
    const initial = bootstrap.initialConfState;
    const brandNew =
      snapshot.index === 0 && entries.length === 0 && initial !== undefined && initial.voters.length > 0;
    if (initial !== undefined) for (const w of initial.witnesses ?? []) assert(initial.voters.includes(w), `witness ${w} is not a voter`);
    const conf = new MemberConfig(brandNew ? { voters: [], learners: [] } : snapshot.confState);
    this.#r = new Raft(config, log, conf);
    const r = this.#r;
    r.becomeFollower(hardState.term, noNode);
    r.vote = hardState.vote;
    this.#prevHard = { ...hardState };
    this.#prevSoft = { leader: noNode, role: 'follower' };
    if (brandNew) this.#bootstrapConf(initial);
    else r.replayConfChanges(snapshot.index, log.applied);
  }

  #bootstrapConf(initial: ConfState): void {
    const r = this.#r;
    if (r.term < 1) r.becomeFollower(1, noNode);
    const witnesses = initial.witnesses ?? [];
    const changes: ConfChange[] = [
      ...initial.voters.map((nodeId): ConfChange => ({
        type: witnesses.includes(nodeId) ? 'addWitness' : 'addVoter',
        nodeId,
        context: new Uint8Array(0),
      })),
      ...initial.learners.map((nodeId): ConfChange => ({ type: 'addLearner', nodeId, context: new Uint8Array(0) })),
    ];
    for (const cc of changes) {
      r.log.append({ term: 1, index: r.log.lastIndex + 1, type: EntryType.ConfChange, data: encodeConfChange(cc) });
      r.conf.apply(cc);
    }
    // Durable only once the first Ready is persisted; committed by construction (every node agrees).
    r.log.stable = 0;
    r.log.handedOut = 0;
    r.log.commitTo(r.log.lastIndex);
  }

  /** One logical clock tick (the driver calls it every heartbeat-interval / heartbeatTicks ms). */
  tick(): void {
    this.#r.tick();
  }

  /** Deliver a message from a peer. Messages from unknown or removed nodes, and stale terms, are handled as Raft says. */
  step(m: Message): void {
    if (m.to !== this.#r.id || m.from === this.#r.id) {
      this.#r.trace(`ignored misrouted ${m.type} from ${m.from} to ${m.to}`);
      return;
    }
    this.#r.step(m);
  }

  /**
   * Propose application data. On a follower the proposal is forwarded to the known leader (MsgProp). A
   * witness takes no proposals (it serves no client).
   */
  propose(data: Uint8Array): ProposeResult {
    const r = this.#r;
    if (isWitness(r)) return { ok: false, error: 'proposalDropped' };
    if (r.role === 'leader') return leaderPropose(r, [{ type: EntryType.Normal, data }]);
    if (r.role !== 'follower' || r.lead === noNode) return { ok: false, error: 'noLeader' };
    const m = r.newMessage(MessageType.Prop, r.lead);
    m.term = 0;
    m.entries = [{ term: 0, index: 0, type: EntryType.Normal, data }];
    r.send(m);
    return { ok: true };
  }

  /** Propose a membership change. Leader only. */
  proposeConfChange(cc: ConfChange): ProposeResult {
    return proposeConfChange(this.#r, cc);
  }

  /**
   * Request a linearizable read point. The answer comes as a ReadState in a later Ready, after the leader
   * has confirmed its leadership with a heartbeat quorum and has committed an entry in its term. A follower
   * forwards to the leader. Requests that cannot be answered (no leader, lost leadership) are dropped; the
   * server times them out. Use a fresh context for every attempt (a retry too): a ReadState is matched to
   * its request by context only (etcd #20418). A duplicate of a pending context is dropped.
   */
  readIndex(context: Uint8Array): void {
    const r = this.#r;
    if (isWitness(r)) return; // a witness serves no reads
    if (r.role === 'leader') {
      leaderReadIndex(r, r.id, context);
      return;
    }
    if (r.role !== 'follower' || r.lead === noNode) return;
    const m = r.newMessage(MessageType.ReadIndex, r.lead);
    m.term = 0;
    m.context = context;
    r.send(m);
  }

  /** Ask the leader to hand leadership to `transferee` (forwarded when called on a follower). */
  transferLeader(transferee: bigint): void {
    const r = this.#r;
    if (r.role === 'leader') {
      leaderTransfer(r, transferee);
      return;
    }
    if (r.role !== 'follower' || r.lead === noNode) return;
    const m = r.newMessage(MessageType.TransferLeader, r.lead);
    m.term = 0;
    m.context = encodeNodeId(transferee);
    r.send(m);
  }

  hasReady(): boolean {
    const r = this.#r;
    const log = r.log;
    return (
      r.bcastPending ||
      r.msgs.length > 0 ||
      r.msgsAfterPersist.length > 0 ||
      log.hasUnhanded() ||
      log.hasNextCommitted() ||
      log.pendingSnapshot !== undefined ||
      r.releasedLog !== undefined ||
      r.readStates.length > 0 ||
      r.lead !== this.#prevSoft.leader ||
      r.role !== this.#prevSoft.role ||
      r.term !== this.#prevHard.term ||
      r.vote !== this.#prevHard.vote ||
      log.committed !== this.#prevHard.commit
    );
  }

  ready(): Ready {
    const r = this.#r;
    const log = r.log;
    if (r.bcastPending) {
      r.bcastPending = false;
      if (r.role === 'leader') bcastAppend(r);
    }
    const seq = ++this.#readySeq;
    const rd: Ready = {
      entries: log.takeUnhanded(seq),
      committedEntries: log.takeCommitted(r.cfg.maxMsgBytes),
      messages: r.msgs,
      messagesAfterPersist: r.msgsAfterPersist,
      readStates: r.readStates,
      persistedUpTo: { index: log.handedOut, term: log.term(log.handedOut) ?? 0, readySeq: seq },
      mustSync: false,
    };
    r.msgs = [];
    r.msgsAfterPersist = [];
    r.readStates = [];
    if (r.lead !== this.#prevSoft.leader || r.role !== this.#prevSoft.role) {
      this.#prevSoft = { leader: r.lead, role: r.role };
      rd.softState = { ...this.#prevSoft };
    }
    const termVoteChanged = r.term !== this.#prevHard.term || r.vote !== this.#prevHard.vote;
    if (termVoteChanged || log.committed !== this.#prevHard.commit) {
      this.#prevHard = { term: r.term, vote: r.vote, commit: log.committed };
      rd.hardState = { ...this.#prevHard };
    }
    if (log.pendingSnapshot !== undefined) {
      rd.snapshot = log.pendingSnapshot;
      this.#snapshotHanded = { index: rd.snapshot.meta.index, seq };
      log.pendingSnapshot = undefined;
    }
    if (r.releasedLog !== undefined) {
      rd.releaseLog = r.releasedLog;
      r.releasedLog = undefined;
    }
    rd.mustSync = termVoteChanged || rd.entries.length > 0 || rd.snapshot !== undefined;
    if (r.role === 'candidate' && r.selfVoteTerm === r.term && this.#selfVote?.term !== r.term) {
      this.#selfVote = { term: r.term, seq };
    }
    if (r.role === 'leader' && rd.committedEntries.length > 0) releaseUncommitted(r, rd.committedEntries);
    return rd;
  }

  /** The driver made a Ready's hard state, snapshot and entries durable. */
  onPersisted(ack: PersistAck): void {
    assert(ack.readySeq <= this.#readySeq, `ack of Ready ${ack.readySeq} never handed out`);
    if (ack.readySeq <= this.#lastAckSeq) return;
    this.#lastAckSeq = ack.readySeq;
    const r = this.#r;
    r.log.stableTo(ack);
    const snap = this.#snapshotHanded;
    if (snap !== undefined && ack.readySeq >= snap.seq) {
      this.#snapshotHanded = undefined;
      if (snap.index > r.log.applied) r.log.applied = snap.index;
    }
    const vote = this.#selfVote;
    if (vote !== undefined && ack.readySeq >= vote.seq) {
      this.#selfVote = undefined;
      r.onSelfVotePersisted(vote.term);
    }
    if (r.role === 'leader') {
      const self = r.progress.get(r.id);
      if (self !== undefined && self.maybeUpdate(r.log.stable) && maybeCommit(r)) onCommitAdvanced(r);
    }
  }

  /**
   * The log is durable here up to this index (acknowledged through onPersisted). With applyUnstable the
   * application may have applied beyond it, and must persist applied state only up to it.
   */
  get stableIndex(): number {
    return this.#r.log.stable;
  }

  /** The application applied everything up to and including `index`. */
  onApplied(index: number): void {
    this.#r.log.appliedTo(index);
  }

  /** Apply a committed conf-change entry's change to the configuration; returns the new configuration. */
  applyConfChange(cc: ConfChange): ConfState {
    return applyConfChange(this.#r, cc);
  }

  /**
   * The application took a snapshot of its state at `index` (≤ applied). The core keeps it for followers
   * that fall behind and releases log entries up to `index - keepEntries`.
   */
  compact(snapshot: Snapshot, keepEntries: number): void {
    assert(Number.isSafeInteger(keepEntries) && keepEntries >= 0, `bad keepEntries ${keepEntries}`);
    this.#r.log.compact(snapshot, keepEntries);
  }

  /** The transport could not reach `id`: the leader moves it to probe state. */
  reportUnreachable(id: bigint): void {
    const pr = this.#r.role === 'leader' ? this.#r.progress.get(id) : undefined;
    if (pr !== undefined && pr.state === 'replicate') pr.becomeProbe();
  }

  /** The transport finished (or failed) sending a snapshot to `id`. */
  reportSnapshot(id: bigint, ok: boolean): void {
    const pr = this.#r.role === 'leader' ? this.#r.progress.get(id) : undefined;
    if (pr === undefined || pr.state !== 'snapshot') return;
    if (!ok) pr.pendingSnapshot = 0;
    pr.becomeProbe();
    // Wait for the next heartbeat response before probing (etcd): the follower may still be restoring.
    pr.probeSent = true;
  }

  status(): Status {
    const r = this.#r;
    const s: Status = {
      id: r.id,
      term: r.term,
      vote: r.vote,
      commit: r.log.committed,
      applied: r.log.applied,
      firstIndex: r.log.firstIndex,
      lastIndex: r.log.lastIndex,
      leader: r.lead,
      role: r.role,
      confState: r.conf.toConfState(),
      leadTransferee: r.leadTransferee,
    };
    if (r.role === 'leader') {
      s.progress = new Map([...r.progress].map(([id, pr]) => [id, pr.view()]));
    }
    return s;
  }
}

function releaseUncommitted(r: Raft, entries: Entry[]): void {
  let bytes = 0;
  for (const e of entries) bytes += e.data.byteLength;
  r.uncommittedBytes = Math.max(0, r.uncommittedBytes - bytes);
}

function validateConfig(c: RaftConfig): void {
  assert(c.id !== noNode, 'config.id must not be 0');
  assert(Number.isSafeInteger(c.heartbeatTicks) && c.heartbeatTicks >= 1, 'heartbeatTicks must be ≥ 1');
  assert(Number.isSafeInteger(c.electionTicks) && c.electionTicks > c.heartbeatTicks, 'electionTicks must exceed heartbeatTicks');
  assert(Number.isSafeInteger(c.maxMsgBytes) && c.maxMsgBytes > 0, 'maxMsgBytes must be positive');
  assert(Number.isSafeInteger(c.maxInflightMsgs) && c.maxInflightMsgs > 0, 'maxInflightMsgs must be positive');
  assert(Number.isSafeInteger(c.maxUncommittedBytes) && c.maxUncommittedBytes > 0, 'maxUncommittedBytes must be positive');
  assert(c.applyUnstable === undefined || typeof c.applyUnstable === 'boolean', 'applyUnstable must be a boolean');
}
