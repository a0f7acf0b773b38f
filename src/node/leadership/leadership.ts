/**
 * This member's view of Raft leadership: who leads, the term, the commit index, read from the driver's
 * soft and hard state as last handed out (RaftDriver.softState/hardState, the one copy; nothing is mirrored
 * here), and the listeners that wait for a leader change. The lessor is promoted and demoted here, with
 * leadership: that promotion state is this class's own.
 */
import { hex } from '../../base/hex.js';
import type { SoftState } from '../../raft/types.js';
import { schedulerOf, type EtcdServerParts } from '../etcd-server-parts.js';
import { EtcdError } from '../errors.js';
import type { RaftDriver } from '../driver/raft-driver.js';
import type { ReadIndexBatcher } from '../request/read-index.js';
import type { ServerState } from '../apply/server-state.js';

/** What leadership takes from the server's parts: time, the election timeout, the leader-change counter, the log. */
export type LeadershipParts = Pick<EtcdServerParts, 'scheduler' | 'electionMs' | 'metrics' | 'logger'>;

export interface LeadershipHost {
  parts: LeadershipParts;
  reads: ReadIndexBatcher;
  /** Built before the server; its soft and hard state start from the restored node's. */
  readonly driver: RaftDriver;
  state(): ServerState;
}

export class Leadership {
  readonly #h: LeadershipHost;
  #leaderListeners = new Set<(leader: bigint) => void>();
  /** This leader's lessor counts expiries (see #promoteLeases); lease renewals wait for it. */
  #leasesPromoted = false;
  #leaseWaiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  /** When (Clock.nowMs) the current leader was first seen: a proposal timing out before it gets etcd's leader-fail message. */
  #leaderElectedMs: number | undefined;

  constructor(host: LeadershipHost) {
    this.#h = host;
  }

  get leader(): bigint {
    return this.#h.driver.softState.leader;
  }

  get isLeader(): boolean {
    return this.#h.driver.softState.role === 'leader';
  }

  get leaderElectedMs(): number | undefined {
    return this.#leaderElectedMs;
  }

  get term(): number {
    return this.#h.driver.hardState.term;
  }

  get commit(): number {
    return this.#h.driver.hardState.commit;
  }

  hasLeader(): boolean {
    return this.leader !== 0n;
  }

  onLeaderChange(listener: (leader: bigint) => void): () => void {
    this.#leaderListeners.add(listener);
    return () => this.#leaderListeners.delete(listener);
  }

  /** A batch was applied; `appliedTerm` is the term of its last entry. */
  onApplied(appliedTerm: number): void {
    if (appliedTerm === this.term) this.#promoteLeases();
  }

  /**
   * Leases: a new leader counts every lease's remaining TTL from now (checkpointed TTLs included), but only
   * once it has applied an entry of its own term, so every revoke of an earlier term is applied first (the
   * lessor's contract). Promoted at once, it renewed a lease whose revoke from its previous term was still
   * in the log, and the key went away right after the acknowledged renewal (production-node seed 7502).
   */
  #promoteLeases(): void {
    if (!this.isLeader || this.#leasesPromoted) return;
    const p = this.#h.parts;
    this.#leasesPromoted = true;
    this.#h.state().lessor.promote(schedulerOf(p).nowMs(), { extendMs: p.electionMs });
    for (const w of this.#leaseWaiters.splice(0)) w.resolve();
  }

  /** Resolves once this leader's lessor is promoted (fails with notLeader if it loses leadership first). */
  leasesReady(): Promise<void> {
    if (!this.isLeader) return Promise.reject(new EtcdError('notLeader'));
    if (this.#leasesPromoted) return Promise.resolve();
    return new Promise((resolve, reject) => this.#leaseWaiters.push({ resolve, reject }));
  }

  /** The member stops: renewals waiting for the lessor fail. */
  failLeaseWaiters(error: unknown): void {
    for (const w of this.#leaseWaiters.splice(0)) w.reject(error);
  }

  /** The driver handed out a new soft state (already its softState); `previous` is the one before. */
  onSoftState(s: SoftState, previous: SoftState): void {
    const p = this.#h.parts;
    if (s.leader !== previous.leader) {
      if (previous.leader !== 0n) this.#h.reads.onLeaderChange(new EtcdError('leaderChanged'));
      if (s.leader !== 0n) {
        p.metrics.leaderChanges.inc();
        this.#leaderElectedMs = schedulerOf(p).nowMs();
        p.logger.info('leader changed', { leader: hex(s.leader), term: this.term });
      } else {
        // etcd: "raft.node: … lost leader … at term N"; a leader id of 0 said the same, cryptically.
        p.logger.warn('no leader: lost the leader', { previousLeader: hex(previous.leader), term: this.term });
      }
      for (const l of this.#leaderListeners) l(s.leader);
    }
    if (s.role !== 'leader' && previous.role === 'leader') {
      if (this.#leasesPromoted) this.#h.state().lessor.demote();
      this.#leasesPromoted = false;
      this.failLeaseWaiters(new EtcdError('notLeader'));
    }
  }
}
