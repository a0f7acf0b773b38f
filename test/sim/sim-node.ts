/**
 * The driver of one simulated node, doing exactly what the server's driver loop will do with a RawNode:
 * call ready() until it has nothing, send `messages` at once, queue hardState/snapshot/entries on the disk,
 * and only when the disk says durable send `messagesAfterPersist` and call onPersisted; apply committedEntries
 * (conf changes through applyConfChange), call onApplied, write the applied state to a write-behind backend
 * once the log is durable that far, and compact every `compactEvery` applied entries.
 * Every observable effect is reported to the checker as it happens.
 *
 * A witness node (src/raft/witness.ts) is driven as the witness server drives it: no state machine at all (its
 * `sm` stays empty), committed conf changes applied to the configuration only, snapshots from the leader
 * (without data) only move the start of its log, and Ready.releaseLog drops log entries on its disk.
 */
import { fromUtf8 } from '../../src/base/bytes.js';
import { decodeConfChange } from '../../src/raft/conf.js';
import { RawNode } from '../../src/raft/raw-node.js';
import type { ConfChange, ConfState, Entry, HardState, Message, NodeId, RaftConfig, Ready, Role } from '../../src/raft/types.js';
import { EntryType, MessageType } from '../../src/raft/types.js';
import type { Checker } from './checker.js';
import type { SimDisk } from './disk.js';
import { LogMirror, SimViolation } from './log-mirror.js';
import { KvStateMachine, decodeProposal } from './state-machine.js';

export interface NodeEnv {
  nowStep(): number;
  checker: Checker;
  /** Put a message on the network (the checker has already seen it). */
  send(m: Message): void;
  /** Wake this node's disk handler at `atStep`. */
  scheduleDisk(id: NodeId, atStep: number): void;
  onApplied(id: NodeId, proposalId: number): void;
  onConfChange(id: NodeId, cc: ConfChange, cs: ConfState): void;
  trace(line: string): void;
}

export interface NodeTuning {
  compactEvery: number;
  keepEntries: number;
  /** Self-test only: write the backend at the applied index even when the log is not durable that far. */
  unsafeBackendAheadOfLog?: boolean;
  /** Self-test only: a witness applies committed entries to a state machine like a data member. */
  unsafeWitnessApplies?: boolean;
}

const readyLoopMax = 1000;

export class SimNode {
  readonly id: NodeId;
  readonly disk: SimDisk;
  raw: RawNode | undefined;
  log = new LogMirror();
  hs: HardState = { term: 0, vote: 0n, commit: 0 };
  role: Role = 'follower';
  leader: NodeId = 0n;
  sm = new KvStateMachine();
  confState: ConfState = { voters: [], learners: [] };
  incarnation = 0;
  frozen = false;
  removed = false;
  /** Snapshots from the leader restored so far (all incarnations). */
  snapshotsRestored = 0;
  /** A witness: it keeps no state machine (see the header). */
  readonly witness: boolean;
  /** Witness: the index up to which it handled committed entries (it applies only conf changes). */
  #witnessApplied = 0;
  #env: NodeEnv;
  #tuning: NodeTuning;
  #lastCompactIndex = 0;
  /** RaftConfig.applyUnstable of the running incarnation. */
  #applyUnstable = false;

  constructor(id: NodeId, disk: SimDisk, env: NodeEnv, tuning: NodeTuning, witness = false) {
    this.id = id;
    this.witness = witness;
    this.disk = disk;
    this.#env = env;
    this.#tuning = tuning;
  }

  get up(): boolean {
    return this.raw !== undefined;
  }

  /** The index this node has applied: its state machine's, or for a witness what it handled. */
  get appliedIndex(): number {
    return this.witness ? this.#witnessApplied : this.sm.appliedIndex;
  }

  /** Start (or restart) from the durable state; a brand-new initial member gets `initial` as its configuration. */
  start(config: RaftConfig, initial: ConfState | undefined): void {
    if (this.witness) {
      this.#startWitness(config, initial);
      return;
    }
    const boot = this.disk.bootstrap();
    if (initial !== undefined && this.disk.isEmpty()) boot.initialConfState = initial;
    const snap = this.disk.durable.snapshot;
    const backend = this.disk.backend;
    const fromBackend = backend !== undefined && backend.index > (snap?.meta.index ?? 0);
    this.sm = fromBackend ? KvStateMachine.fromSnapshot(backend.data)
      : snap === undefined ? new KvStateMachine() : KvStateMachine.fromSnapshot(snap.data);
    this.confState = snap?.meta.confState ?? initial ?? { voters: [], learners: [] };
    this.#lastCompactIndex = boot.snapshot.index;
    this.#beginIncarnation(config);
    // Asserts that the log holds every entry up to the backend's index (committed ≤ last index).
    this.raw = new RawNode(config, boot);
    if (snap !== undefined) {
      if (!fromBackend) this.#env.checker.onRestore(this.id, snap.meta.index, this.sm.hash);
      // The core keeps no snapshot across a restart: hand it the durable one for lagging followers.
      this.raw.compact(snap, this.#tuning.keepEntries);
    }
    if (fromBackend) {
      // The core replayed the conf changes up to the backend's index itself.
      this.confState = this.raw.status().confState;
      this.#env.checker.onRestore(this.id, this.sm.appliedIndex, this.sm.hash);
    }
    this.drain();
  }

  /** What every start shares: the driver's view of the durable log and hard state, a fresh incarnation. */
  #beginIncarnation(config: RaftConfig): void {
    this.#applyUnstable = config.applyUnstable === true;
    this.log = this.disk.durable.log.clone();
    this.hs = { ...this.disk.durable.hardState };
    this.role = 'follower';
    this.leader = 0n;
    this.incarnation++;
    this.frozen = false;
  }

  /** A witness restarts from its log alone: no state machine, no backend, no snapshot to hand the core. */
  #startWitness(config: RaftConfig, initial: ConfState | undefined): void {
    const boot = this.disk.bootstrap();
    if (initial !== undefined && this.disk.isEmpty()) boot.initialConfState = initial;
    if (this.disk.backend !== undefined) throw new SimViolation(`witness ${this.id} has a backend`);
    const snap = this.disk.durable.snapshot;
    if (snap !== undefined && snap.data.length > 0) throw new SimViolation(`witness ${this.id} holds a state snapshot`);
    this.sm = new KvStateMachine();
    this.#witnessApplied = boot.applied;
    this.#beginIncarnation(config);
    this.raw = new RawNode(config, boot);
    this.confState = this.raw.status().confState;
    this.drain();
  }

  crash(): void {
    this.raw = undefined;
    this.disk.crash();
    this.role = 'follower';
    this.leader = 0n;
    this.#env.checker.onStopped(this.id);
  }

  /** Hand out and carry out Readies until the core has none. */
  drain(): void {
    const raw = this.raw;
    if (raw === undefined) return;
    for (let i = 0; raw.hasReady(); i++) {
      if (i >= readyLoopMax) throw new SimViolation(`node ${this.id}: ready() did not settle after ${readyLoopMax} rounds`);
      this.#handle(raw, raw.ready());
      if (this.raw !== raw) return;
    }
  }

  /** The disk may have finished syncs: make them durable one by one, releasing what waited on each. */
  onDisk(): void {
    const raw = this.raw;
    if (raw === undefined || this.frozen) return;
    for (;;) {
      const w = this.disk.completeNext(this.#env.nowStep());
      if (w === undefined) break;
      this.#env.checker.onDurable(this.id, this.disk.durable.hardState);
      w.messagesAfterPersist.forEach((m, i) => this.#send(m, w.ackedTerms?.[i]));
      if (w.ack !== undefined) raw.onPersisted(w.ack);
    }
    this.#flushBackend(raw);
    this.drain();
  }

  #handle(raw: RawNode, rd: Ready): void {
    const checker = this.#env.checker;
    const wasLeader = this.role === 'leader';
    const stillLeader = (rd.softState?.role ?? this.role) === 'leader';
    // Leader in the same term before and after this Ready: its log may only grow.
    const sameTermLeader = wasLeader && stillLeader && (rd.hardState?.term ?? this.hs.term) === this.hs.term;
    if (rd.snapshot !== undefined) this.#restore(rd);
    if (rd.releaseLog !== undefined) this.#releaseLog(rd.releaseLog.index);
    if (rd.entries.length > 0) {
      // A witness leads only to hand its log over: it never appends an entry of its own term.
      const term = rd.hardState?.term ?? this.hs.term;
      if (this.witness && stillLeader && rd.entries.some((e) => e.term === term)) checker.fail(`witness ${this.id} appended an entry as leader of term ${term}`);
      const truncatedFrom = this.log.append(rd.entries);
      checker.onAppend(this.id, rd.entries, this.log, truncatedFrom, this.hs.commit, sameTermLeader ? this.hs.term : undefined);
    }
    if (rd.hardState !== undefined) {
      checker.onHardState(this.id, this.hs, rd.hardState, this.log, sameTermLeader);
      this.hs = { ...rd.hardState };
    }
    if (rd.softState !== undefined) this.#onSoftState(rd.softState.role, rd.softState.leader);
    checker.drainCompleteness((id) => (id === this.id ? this.log : undefined));
    for (const m of rd.messages) this.#send(m, this.#ackedTerm(m));
    const hasWrite = rd.hardState !== undefined || rd.snapshot !== undefined || rd.entries.length > 0;
    if (hasWrite || rd.messagesAfterPersist.length > 0) {
      const ackedTerms = rd.messagesAfterPersist.map((m) => this.#ackedTerm(m));
      const write = { entries: rd.entries, ack: rd.persistedUpTo, messagesAfterPersist: rd.messagesAfterPersist, ackedTerms };
      const doneAt = this.disk.enqueue({ ...write, ...optional(rd) }, this.#env.nowStep(), rd.mustSync);
      this.#env.scheduleDisk(this.id, doneAt);
    }
    if (rd.releaseLog !== undefined) {
      // Queued after this Ready's writes: the log's new start is durable only behind them.
      const release = { meta: rd.releaseLog, data: new Uint8Array(0) };
      this.#env.scheduleDisk(this.id, this.disk.saveSnapshot(release, this.#env.nowStep()));
    }
    if (rd.committedEntries.length > 0) {
      if (this.witness && this.#tuning.unsafeWitnessApplies !== true) this.#witnessApply(raw, rd.committedEntries);
      else this.#apply(raw, rd.committedEntries);
    }
    for (const rs of rd.readStates) checker.onReadState(this.id, fromUtf8(rs.context), rs.index);
  }

  #restore(rd: Ready): void {
    const snap = rd.snapshot!;
    this.log.restore(snap.meta.index, snap.meta.term);
    if (this.witness) {
      // A witness gets the metadata only: its log restarts after it, there is no state to restore.
      if (snap.data.length > 0) throw new SimViolation(`witness ${this.id} was sent a state snapshot at ${snap.meta.index}`);
      this.confState = snap.meta.confState;
      this.#witnessApplied = snap.meta.index;
      this.snapshotsRestored++;
      this.#env.trace(`n${this.id} (witness) log restarts after ${snap.meta.index}`);
      return;
    }
    if (snap.data.length === 0) throw new SimViolation(`node ${this.id} got a snapshot at ${snap.meta.index} without data`);
    this.sm = KvStateMachine.fromSnapshot(snap.data);
    if (this.sm.appliedIndex !== snap.meta.index) throw new SimViolation(`snapshot meta index ${snap.meta.index} != data index ${this.sm.appliedIndex}`);
    this.confState = snap.meta.confState;
    this.#lastCompactIndex = snap.meta.index;
    this.snapshotsRestored++;
    this.#env.checker.onRestore(this.id, snap.meta.index, this.sm.hash);
    this.#env.trace(`n${this.id} restored snapshot @${snap.meta.index}`);
  }

  /** Witness: Ready.releaseLog dropped its entries up to `index` (the disk follows once the save is durable). */
  #releaseLog(index: number): void {
    if (!this.witness) throw new SimViolation(`data member ${this.id} was told to release its log at ${index}`);
    this.log.compact(index);
  }

  /** Witness: committed entries change nothing but the configuration. */
  #witnessApply(raw: RawNode, ents: Entry[]): void {
    for (const e of ents) {
      if (e.index !== this.#witnessApplied + 1) throw new SimViolation(`witness ${this.id} handles ${e.index} after ${this.#witnessApplied}`);
      if (e.type === EntryType.ConfChange) {
        const cc = decodeConfChange(e.data);
        this.confState = raw.applyConfChange(cc);
        this.#env.onConfChange(this.id, cc, this.confState);
      }
      this.#witnessApplied = e.index;
    }
    raw.onApplied(this.#witnessApplied);
  }

  #onSoftState(role: Role, leader: NodeId): void {
    const changed = role !== this.role;
    this.role = role;
    this.leader = leader;
    if (!changed) return;
    this.#env.trace(`n${this.id} ${role} term ${this.hs.term}`);
    this.#env.checker.onRole(this.id, role, this.hs.term, this.log);
  }

  /** For an append ack: the term of the acked entry as the log holds it when the ack is handed out. */
  #ackedTerm(m: Message): number | undefined {
    return m.type === MessageType.AppResp && !m.reject ? this.log.term(m.index) : undefined;
  }

  #send(m: Message, ackedTerm: number | undefined): void {
    this.#env.checker.onSend(m, this.disk.durable.hardState, this.disk.durable.log, ackedTerm);
    this.#env.send(m);
  }

  #apply(raw: RawNode, ents: Entry[]): void {
    const durable = this.disk.durable.log;
    for (const e of ents) {
      if (e.index !== this.sm.appliedIndex + 1) {
        throw new SimViolation(`node ${this.id} applies ${e.index} after ${this.sm.appliedIndex}`);
      }
      if (!this.#applyUnstable && e.index > durable.snapIndex && durable.term(e.index) !== e.term) {
        throw new SimViolation(`node ${this.id} applies ${e.index} before it is durable locally`);
      }
      if (e.type === EntryType.ConfChange) {
        const cc = decodeConfChange(e.data);
        this.confState = raw.applyConfChange(cc);
        this.#env.onConfChange(this.id, cc, this.confState);
      }
      const isProposal = e.type === EntryType.Normal && e.data.length > 0;
      this.sm.apply(e, isProposal);
      this.#env.checker.onApply(this.id, e, this.sm.hash, this.hs.commit);
      const pid = isProposal ? decodeProposal(e.data) : undefined;
      if (pid !== undefined) this.#env.onApplied(this.id, pid);
    }
    raw.onApplied(this.sm.appliedIndex);
    this.#flushBackend(raw);
    this.#maybeCompact(raw);
  }

  /**
   * The server's write-behind backend: applied state is written only once the log is durable up to it
   * (stableIndex), else it waits in memory for the ack (this model flushes all or nothing).
   */
  #flushBackend(raw: RawNode): void {
    const index = this.sm.appliedIndex;
    if (index <= (this.disk.backend?.index ?? 0)) return;
    if (index > raw.stableIndex && this.#tuning.unsafeBackendAheadOfLog !== true) return;
    const term = this.log.term(index);
    if (term === undefined) throw new SimViolation(`node ${this.id} cannot find the term of applied index ${index}`);
    this.disk.writeBackend(index, term, this.sm.snapshot());
  }

  #maybeCompact(raw: RawNode): void {
    const index = this.sm.appliedIndex;
    if (index - this.#lastCompactIndex < this.#tuning.compactEvery) return;
    const term = this.log.term(index);
    if (term === undefined) throw new SimViolation(`node ${this.id} cannot find the term of applied index ${index}`);
    const snap = { meta: { index, term, confState: this.confState }, data: this.sm.snapshot() };
    raw.compact(snap, this.#tuning.keepEntries);
    this.#env.scheduleDisk(this.id, this.disk.saveSnapshot(snap, this.#env.nowStep()));
    this.#lastCompactIndex = index;
  }
}

function optional(rd: Ready): { hardState?: HardState; snapshot?: Ready['snapshot'] } {
  const o: { hardState?: HardState; snapshot?: Ready['snapshot'] } = {};
  if (rd.hardState !== undefined) o.hardState = rd.hardState;
  if (rd.snapshot !== undefined) o.snapshot = rd.snapshot;
  return o;
}
