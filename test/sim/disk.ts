/**
 * The simulated disk of one node. Writes are queued in order and become durable only when their sync
 * completes; syncs complete in FIFO order (a later write is never durable before an earlier one). A crash loses
 * every write whose sync has not completed. Latency comes from a profile that mixes fast syncs with rare slow
 * ones much longer than an election timeout (etcd #15247: slow fsync must not cause churn or unsafety).
 *
 * Application snapshots (compaction) go through the same queue: like etcd's snapshot record in its WAL, one
 * is durable only after every write queued before it (the hard state whose commit covers it included).
 */
import type { Prng } from '../../src/base/prng.js';
import type { Entry, HardState, Message, PersistAck, RaftBootstrap, Snapshot } from '../../src/raft/types.js';
import { LogMirror, SimViolation } from './log-mirror.js';

export interface DiskProfile {
  syncMinSteps: number;
  syncMaxSteps: number;
  /** Probability that a sync is slow. */
  slowRate: number;
  slowMinSteps: number;
  slowMaxSteps: number;
}

export const fastDisk: DiskProfile = { syncMinSteps: 1, syncMaxSteps: 1, slowRate: 0, slowMinSteps: 0, slowMaxSteps: 0 };

export interface DiskWrite {
  hardState?: HardState;
  snapshot?: Snapshot;
  entries: Entry[];
  /** Absent for an application snapshot save. */
  ack?: PersistAck;
  messagesAfterPersist: Message[];
  /** Per message in messagesAfterPersist: the acked entry's term for append acks (for the checker). */
  ackedTerms?: (number | undefined)[];
  /** An application snapshot to save (compaction), rather than a Ready's write. */
  appSnapshot?: Snapshot;
  doneAtStep: number;
}

export interface DurableState {
  hardState: HardState;
  snapshot?: Snapshot;
  log: LogMirror;
}

/**
 * The application's write-behind backend (the server's LevelDB): its state at `index`, written outside the
 * log's queue and durable at once, the worst case for the rule that it never gets ahead of the durable log.
 */
export interface BackendState {
  index: number;
  data: Uint8Array;
}

export class SimDisk {
  #rng: Prng;
  profile: DiskProfile;
  #pending: DiskWrite[] = [];
  #lastDoneStep = 0;
  readonly durable: DurableState = { hardState: { term: 0, vote: 0n, commit: 0 }, log: new LogMirror() };
  /** Survives crashes (see BackendState); undefined until the node first flushes. */
  backend: BackendState | undefined;
  writes = 0;

  constructor(rng: Prng, profile: DiskProfile = fastDisk) {
    this.#rng = rng;
    this.profile = { ...profile };
  }

  get pendingCount(): number {
    return this.#pending.length;
  }

  /** Queue a write; returns the step at which its sync completes. `sync: false` writes ride on the queue. */
  enqueue(w: Omit<DiskWrite, 'doneAtStep'>, nowStep: number, sync: boolean): number {
    const latency = sync ? this.#latency() : 0;
    const doneAtStep = Math.max(nowStep + latency, this.#lastDoneStep);
    this.#lastDoneStep = doneAtStep;
    this.#pending.push({ ...w, doneAtStep });
    this.writes++;
    return doneAtStep;
  }

  #latency(): number {
    const p = this.profile;
    if (p.slowRate > 0 && this.#rng.next() < p.slowRate) {
      return p.slowMinSteps + this.#rng.int(p.slowMaxSteps - p.slowMinSteps + 1);
    }
    return p.syncMinSteps + this.#rng.int(p.syncMaxSteps - p.syncMinSteps + 1);
  }

  /**
   * Make the oldest write durable if its sync has completed by `nowStep`, and return it. One at a time, so
   * the driver sends each write's messagesAfterPersist while the durable state is exactly that write's.
   */
  completeNext(nowStep: number): DiskWrite | undefined {
    const w = this.#pending[0];
    if (w === undefined || w.doneAtStep > nowStep) return undefined;
    this.#pending.shift();
    this.#apply(w);
    return w;
  }

  #apply(w: DiskWrite): void {
    if (w.appSnapshot !== undefined) {
      this.#saveSnapshot(w.appSnapshot);
      return;
    }
    const d = this.durable;
    if (w.snapshot !== undefined) {
      const meta = w.snapshot.meta;
      if (meta.index < d.log.snapIndex) {
        throw new SimViolation(`snapshot at ${meta.index} older than the durable one at ${d.log.snapIndex}`);
      }
      d.snapshot = w.snapshot;
      d.log.restore(meta.index, meta.term);
    }
    d.log.append(w.entries);
    if (w.hardState !== undefined) d.hardState = { ...w.hardState };
    const c = d.hardState.commit;
    if (c > d.log.lastIndex() || c < d.log.snapIndex) {
      throw new SimViolation(`durable commit ${c} outside the durable log (${d.log.snapIndex}, ${d.log.lastIndex()}]`);
    }
  }

  /** Queue an application snapshot; once durable it releases the log entries it covers. */
  saveSnapshot(snap: Snapshot, nowStep: number): number {
    return this.enqueue({ entries: [], messagesAfterPersist: [], appSnapshot: snap }, nowStep, true);
  }

  #saveSnapshot(snap: Snapshot): void {
    if (snap.meta.index <= this.durable.log.snapIndex) return;
    this.durable.snapshot = snap;
    this.durable.log.compact(snap.meta.index);
    if (this.durable.hardState.commit < snap.meta.index) {
      throw new SimViolation(`application snapshot at ${snap.meta.index} beyond durable commit ${this.durable.hardState.commit}`);
    }
  }

  /**
   * An operator restores this (stopped) node's data from an older backup: the state at `snap`, an empty log
   * after it, the hard state's term and vote kept (so it never votes twice in a term), its commit at `snap`.
   */
  restoreBackup(snap: Snapshot): void {
    if (this.#pending.length > 0) throw new SimViolation('restore onto a disk with writes in flight');
    this.durable.snapshot = snap;
    this.durable.log = new LogMirror();
    this.durable.log.restore(snap.meta.index, snap.meta.term);
    this.durable.hardState = { ...this.durable.hardState, commit: snap.meta.index };
    this.backend = undefined;
  }

  /** Power loss: every write whose sync has not completed is gone. Returns how many were lost. */
  crash(): number {
    const lost = this.#pending.length;
    this.#pending = [];
    this.#lastDoneStep = 0;
    return lost;
  }

  /**
   * Write the backend at `index`: the durable log must already hold that entry (a crash now would otherwise
   * leave applied state the log cannot replay to, and the restart would claim entries it does not have).
   */
  writeBackend(index: number, term: number, data: Uint8Array): void {
    const log = this.durable.log;
    const held = index <= log.snapIndex || log.term(index) === term;
    if (index > log.lastIndex() || !held) {
      throw new SimViolation(`backend written at ${index} (term ${term}) beyond the durable log (last ${log.lastIndex()}, term there ${log.term(index)})`);
    }
    if (this.backend !== undefined && index < this.backend.index) throw new SimViolation(`backend went back from ${this.backend.index} to ${index}`);
    this.backend = { index, data };
  }

  /**
   * What a restarting node reads back; the state machine restarts from the durable snapshot, or from the
   * backend when that is newer (then `applied` is the backend's index).
   */
  bootstrap(): RaftBootstrap {
    const d = this.durable;
    const meta = d.snapshot?.meta ?? { index: 0, term: 0, confState: { voters: [], learners: [] } };
    return {
      hardState: { ...d.hardState },
      snapshot: meta,
      entries: d.log.entries.slice(),
      applied: Math.max(meta.index, this.backend?.index ?? 0),
    };
  }

  isEmpty(): boolean {
    return this.durable.log.lastIndex() === 0 && this.durable.hardState.term === 0 && this.durable.snapshot === undefined;
  }
}
