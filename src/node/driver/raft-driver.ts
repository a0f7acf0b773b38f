/**
 * The driver loop: the one place where the pure Raft core meets time, disk and network.
 *
 * - Wall time becomes tick() calls on an interval timer.
 * - Each Ready is carried out at once: `messages` leave now; hard state, entries and snapshot go to the log,
 *   and only when the log says they are durable do `messagesAfterPersist` leave and onPersisted() reach the
 *   core. Persistence runs beside the loop: while a sync is in flight the loop keeps ticking, heartbeating,
 *   voting and receiving, and the leader replicates entries before its own copy is on disk.
 * - Committed entries go to the apply pipeline, in order (with applyUnstable, before this member's own copy is
 *   durable: onStable tells the application how far it may persist); a received snapshot is restored before
 *   any entry after it is applied.
 *
 * Lifecycle: constructed first, from the restored node and the log (the server and the transport are built on
 * it); `start(app, transport)` hands it the two consumers of its output and starts the clock. Until then it
 * does nothing: peer messages and reports that arrive before start are dropped (Raft retries them).
 */
import { assert } from '../../base/assert.js';
import type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  Message,
  ProposeResult,
  ReadState,
  Ready,
  Snapshot,
  SnapshotMeta,
  SoftState,
  Status,
} from '../../raft/types.js';
import type { RawNode } from '../../raft/raw-node.js';
import type { Scheduler, TimerHandle } from '../../base/scheduler.js';
import { realScheduler } from './real-scheduler.js';
import { TickWheel } from './tick-wheel.js';

/** What the driver needs from the durable log. */
export interface DriverLog {
  save(update: { hardState?: HardState; entries: Entry[]; sync: boolean }): Promise<void>;
  saveSnapshot(snapshot: Snapshot): Promise<void>;
  /**
   * Witness members only (Ready.releaseLog): the log now starts after `meta.index`; record that start and
   * drop the entries it covers. Called after the save of the Ready that carried it (the log keeps call order).
   */
  releaseLog?(meta: SnapshotMeta): Promise<void>;
}

/** What the driver needs from the peer transport. */
export interface DriverTransport {
  send(messages: Message[]): void;
}

/** What the driver needs from the application (apply pipeline). */
export interface DriverApp {
  /** Apply entries in order (synchronous and deterministic). */
  applyEntries(entries: Entry[]): void;
  /**
   * Before each batch of entries: undefined when the application can apply it now; otherwise a promise that
   * settles when it can (its backend is behind). Entries wait in the apply queue meanwhile, ticks, votes and
   * appends go on, and the growing apply lag turns new proposals away ("too many requests").
   */
  applyHold(): Promise<void> | undefined;
  /** Restore the state machine from a durable snapshot, before any later entry is applied. */
  restoreSnapshot(snapshot: Snapshot): Promise<void>;
  /** Leader or role changed (`previous`: the soft state handed out before); driver.softState is `state` already. */
  onSoftState(state: SoftState, previous: SoftState): void;
  onReadStates(states: ReadState[]): void;
  /**
   * The log is durable up to `index` (after each acknowledged save). Entries may be applied before this
   * (RaftConfig.applyUnstable): applied state must be persisted only up to here.
   */
  onStable(index: number): void;
  /** A failure of the log is fatal: the member stops (never retry an fsync). */
  onFatal(error: unknown): void;
}

export interface DriverOptions {
  tickIntervalMs: number;
  /** Time and timers (default: the real ones; the simulator passes its own). */
  scheduler?: Scheduler;
  /**
   * Test fault (src/config/test-faults.ts): acknowledge a Ready as durable at once and hand it to the log
   * only ackBeforePersistDelayMs later, so a kill -9 loses acknowledged writes. Never set in production.
   */
  unsafeAckBeforePersist?: boolean;
}

/** How long the ack-before-persist test fault holds each save back. */
export const ackBeforePersistDelayMs = 500;

export class RaftDriver {
  readonly #node: RawNode;
  readonly #log: DriverLog;
  /** The consumers of Ready, given at start (see the lifecycle above). */
  #wired: { readonly app: DriverApp; readonly transport: DriverTransport } | undefined;
  readonly #tickIntervalMs: number;
  readonly #ackBeforePersist: boolean;
  readonly #scheduler: Scheduler;
  #ticker: TimerHandle | undefined;
  /**
   * Periodic work of the member (leader loops, watch resync, …) runs on these ticks, in the tick's own
   * event-loop turn, instead of on timers of its own: one wake-up per tick at rest (tick-wheel.ts).
   */
  readonly ticks: TickWheel;
  #scheduled = false;
  #draining = false;
  /**
   * The newest soft and hard state handed out: Raft's leader, role, term and commit as this member has been
   * told them, in Ready order. The one copy the server reads (leadership, headers, quota, health), cheap
   * to read per request (status() builds the whole Status). Starts from the node's state at construction,
   * which its first Ready does not repeat.
   */
  #softState: SoftState;
  #hardState: HardState;
  #stopped = false;
  /** The stable index the application last heard of (onStable). */
  #reportedStable = 0;
  /** The newest snapshot received from a leader and handed to the log (0: none). */
  #receivedSnapshotIndex = 0;
  /** The tail of the persistence chain: saves must complete in Ready order. */
  #persistTail: Promise<void> = Promise.resolve();
  /**
   * Apply work in Ready order. A received snapshot takes its place in the line when its Ready is handed out,
   * and is restored once it is durable (a backend restored ahead of the log would leave a log that cannot
   * reach the backend after a crash); entries committed meanwhile wait behind it, even though, with
   * applyUnstable, later Readies hand them out before the snapshot's save completes.
   */
  #applyQueue: Array<{ entries: Entry[] } | { snapshot: Snapshot; durable: Promise<void> }> = [];
  #restoring = false;
  /** The application asked apply to wait (applyHold). */
  #held = false;

  constructor(node: RawNode, log: DriverLog, options: DriverOptions) {
    this.#node = node;
    this.#log = log;
    this.#tickIntervalMs = options.tickIntervalMs;
    this.ticks = new TickWheel(options.tickIntervalMs);
    this.#ackBeforePersist = options.unsafeAckBeforePersist === true;
    this.#scheduler = options.scheduler ?? realScheduler;
    this.#reportedStable = node.stableIndex;
    const s = node.status();
    this.#softState = { leader: s.leader, role: s.role };
    this.#hardState = { term: s.term, vote: s.vote, commit: s.commit };
  }

  start(app: DriverApp, transport: DriverTransport): void {
    assert(this.#wired === undefined, 'driver started twice');
    this.#wired = { app, transport };
    this.#ticker = this.#scheduler.every(this.#tickIntervalMs, () => {
      this.#node.tick();
      this.#drainNow();
      this.ticks.tick();
    });
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    this.#ticker?.cancel();
  }

  /** Advance the logical clock by `ticks` at once (fast-forward an election nobody else can contest). */
  advanceTicks(ticks: number): void {
    for (let i = 0; i < ticks; i++) this.#node.tick();
    this.#schedule();
  }

  /** Resolves once every save handed to the log so far is durable (or rejects if the log failed). */
  persisted(): Promise<void> {
    return this.#persistTail;
  }

  /**
   * The index of the newest snapshot from a leader handed to the log: a local snapshot at or below it must
   * not be saved after it (the log refuses a snapshot older than its current one).
   */
  get receivedSnapshotIndex(): number {
    return this.#receivedSnapshotIndex;
  }

  /** Leader and role as last handed out (see #softState). */
  get softState(): SoftState {
    return this.#softState;
  }

  /** Term, vote and commit as last handed out (see #softState). */
  get hardState(): HardState {
    return this.#hardState;
  }

  get node(): RawNode {
    return this.#node;
  }

  status(): Status {
    return this.#node.status();
  }

  /**
   * Where every promise the driver starts ends when it fails: a failed save, and a throw in the work that
   * follows one (an assertion in apply, in the core's onPersisted, in the application's onStable), which
   * would otherwise be an unhandled rejection that bypasses the member's stop sequence.
   */
  readonly #fatal = (error: unknown): void => this.#app.onFatal(error);

  get #app(): DriverApp {
    assert(this.#wired !== undefined, 'the driver was used before start');
    return this.#wired.app;
  }

  get #transport(): DriverTransport {
    assert(this.#wired !== undefined, 'the driver was used before start');
    return this.#wired.transport;
  }

  /** A batch of peer messages (one transport frame): step them all, then answer at once. Dropped before start. */
  step(messages: Message[]): void {
    if (this.#stopped || this.#wired === undefined) return;
    for (const m of messages) this.#node.step(m);
    this.#drainNow();
  }

  propose(data: Uint8Array): ProposeResult {
    const r = this.#node.propose(data);
    this.#schedule();
    return r;
  }

  proposeConfChange(cc: ConfChange): ProposeResult {
    const r = this.#node.proposeConfChange(cc);
    this.#schedule();
    return r;
  }

  readIndex(context: Uint8Array): void {
    this.#node.readIndex(context);
    this.#schedule();
  }

  transferLeader(to: bigint): void {
    this.#node.transferLeader(to);
    this.#schedule();
  }

  applyConfChange(cc: ConfChange): ConfState {
    return this.#node.applyConfChange(cc);
  }

  compact(snapshot: Snapshot, keepEntries: number): void {
    this.#node.compact(snapshot, keepEntries);
  }

  reportUnreachable(id: bigint): void {
    if (this.#wired === undefined) return;
    this.#node.reportUnreachable(id);
    this.#schedule();
  }

  reportSnapshot(id: bigint, ok: boolean): void {
    if (this.#wired === undefined) return;
    this.#node.reportSnapshot(id, ok);
    this.#schedule();
  }

  /**
   * Inputs that already come in batches (a tick, a frame of peer messages, a finished save) are handled at
   * once: every event-loop turn a message waits adds latency to each hop of replication. Proposals and reads
   * go through #schedule, so the many client requests decoded in one turn share one Ready (one MsgApp per
   * follower, one log write).
   */
  #drainNow(): void {
    if (this.#stopped) return;
    if (this.#draining) {
      this.#schedule();
      return;
    }
    this.#drain();
  }

  /** Coalesce work: many inputs in one event-loop turn make one pass over Ready. */
  #schedule(): void {
    if (this.#scheduled || this.#stopped) return;
    this.#scheduled = true;
    this.#scheduler.soon(() => {
      this.#scheduled = false;
      if (!this.#stopped) this.#drain();
    });
  }

  #drain(): void {
    this.#draining = true;
    try {
      while (this.#node.hasReady()) this.#handle(this.#node.ready());
    } finally {
      this.#draining = false;
    }
  }

  #handle(rd: Ready): void {
    // Entries that replaced a durable suffix lowered the stable index (the old entries' durability vouches
    // for nothing now): the application must hear it before it applies the new ones, or it persists their
    // effects beyond the log (production-node seed 20279: a follower crashed with the old entry on disk
    // and the new one's effects in its backend, and could never catch up).
    const stable = this.#node.stableIndex;
    if (stable < this.#reportedStable) this.#app.onStable(stable);
    this.#reportedStable = stable;
    if (rd.hardState !== undefined) this.#hardState = rd.hardState;
    if (rd.softState !== undefined) {
      const previous = this.#softState;
      this.#softState = rd.softState;
      this.#app.onSoftState(rd.softState, previous);
    }
    if (rd.messages.length > 0) this.#transport.send(rd.messages);
    const durable = this.#persist(rd);
    if (rd.releaseLog !== undefined) {
      assert(this.#log.releaseLog !== undefined, 'a witness log release reached a log that cannot release');
      this.#log.releaseLog(rd.releaseLog).catch(this.#fatal);
    }
    if (rd.snapshot !== undefined) {
      this.#receivedSnapshotIndex = Math.max(this.#receivedSnapshotIndex, rd.snapshot.meta.index);
      this.#enqueueApply({ snapshot: rd.snapshot, durable });
    }
    if (rd.readStates.length > 0) this.#app.onReadStates(rd.readStates);
    if (rd.committedEntries.length > 0) this.#enqueueApply({ entries: rd.committedEntries });
  }

  /** Hands the Ready's writes to the log; resolves once they are durable. */
  #persist(rd: Ready): Promise<void> {
    const hasWork = rd.hardState !== undefined || rd.entries.length > 0 || rd.snapshot !== undefined;
    const snapshot = rd.snapshot;
    let saved: Promise<void>;
    if (!hasWork) {
      // Nothing to write, but acknowledgements still wait for earlier saves to be durable.
      saved = this.#persistTail;
    } else {
      // The log keeps saves in call order (a snapshot's data file is durable before its meta record and
      // before any later save), so each save is handed over at once and joins the current group commit.
      const write = (): Promise<void> => {
        if (snapshot !== undefined) void this.#log.saveSnapshot(snapshot).catch(() => {});
        return this.#log.save({ hardState: rd.hardState, entries: rd.entries, sync: rd.mustSync });
      };
      if (this.#ackBeforePersist) {
        // Test fault: claim durability now, write later (timers of one delay fire in order, so saves keep it).
        this.#scheduler.after(ackBeforePersistDelayMs, () => void write().catch(this.#fatal));
        saved = Promise.resolve();
      } else {
        saved = write();
      }
    }
    this.#persistTail = saved;
    // One then with both handlers, a throw in the first caught in it (issue 34: a .catch per Ready was a
    // second promise per put, twice per put at one client).
    saved.then(() => this.#persisted(rd), this.#fatal);
    return saved;
  }

  /** A Ready's writes are durable: its held-back messages leave, the core and the application hear it. */
  #persisted(rd: Ready): void {
    if (this.#stopped) return;
    try {
      if (rd.messagesAfterPersist.length > 0) this.#transport.send(rd.messagesAfterPersist);
      this.#node.onPersisted(rd.persistedUpTo);
      this.#reportedStable = this.#node.stableIndex;
      this.#app.onStable(this.#reportedStable);
      this.#drainNow();
    } catch (err) {
      this.#fatal(err);
    }
  }

  #enqueueApply(work: { entries: Entry[] } | { snapshot: Snapshot; durable: Promise<void> }): void {
    this.#applyQueue.push(work);
    this.#runApply();
  }

  #runApply(): void {
    while (!this.#restoring && !this.#held && this.#applyQueue.length > 0 && !this.#stopped) {
      const work = this.#applyQueue[0]!;
      if ('entries' in work) {
        const hold = this.#app.applyHold();
        if (hold !== undefined) {
          this.#held = true;
          hold.then(() => {
            this.#held = false;
            this.#runApply();
          }).catch(this.#fatal);
          return;
        }
        this.#applyQueue.shift();
        this.#app.applyEntries(work.entries);
        this.#node.onApplied(work.entries[work.entries.length - 1]!.index);
        this.#schedule();
      } else {
        this.#applyQueue.shift();
        this.#restoring = true;
        work.durable.then(() => (this.#stopped ? undefined : this.#app.restoreSnapshot(work.snapshot))).then(() => {
          if (this.#stopped) return;
          this.#restoring = false;
          this.#node.onApplied(work.snapshot.meta.index);
          this.#schedule();
          this.#runApply();
        }).catch(this.#fatal);
      }
    }
  }
}
