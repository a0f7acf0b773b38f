/**
 * This member's view of Raft leadership and progress, as the driver last reported it (soft state on every
 * change, hard state after each applied batch): who leads, the term, the commit index; and the listeners
 * that wait for a leader change. The lessor is promoted and demoted here, with leadership.
 */
import { hex } from '../../base/hex.js';
import type { HardState, SoftState } from '../../raft/types.js';
import { schedulerOf, type EtcdServerParts } from '../etcd-server-parts.js';
import { EtcdError } from '../errors.js';
import type { RaftDriver } from '../driver/raft-driver.js';
import type { ReadIndexBatcher } from '../request/read-index.js';
import type { ServerState } from '../apply/server-state.js';

export interface LeadershipHost {
  parts: EtcdServerParts;
  reads: ReadIndexBatcher;
  driver(): RaftDriver;
  state(): ServerState;
}

export class Leadership {
  readonly #h: LeadershipHost;
  #leader = 0n;
  #isLeader = false;
  #term = 0;
  #commit = 0;
  #leaderListeners = new Set<(leader: bigint) => void>();
  /** This leader's lessor counts expiries (see #promoteLeases); lease renewals wait for it. */
  #leasesPromoted = false;
  #leaseWaiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];

  constructor(host: LeadershipHost) {
    this.#h = host;
  }

  get leader(): bigint {
    return this.#leader;
  }

  get isLeader(): boolean {
    return this.#isLeader;
  }

  get term(): number {
    return this.#term;
  }

  get commit(): number {
    return this.#commit;
  }

  hasLeader(): boolean {
    return this.#leader !== 0n;
  }

  onLeaderChange(listener: (leader: bigint) => void): () => void {
    this.#leaderListeners.add(listener);
    return () => this.#leaderListeners.delete(listener);
  }

  /** Raft's hard state after a batch was applied, and the term of the last entry applied. */
  onHardState(hs: HardState, appliedTerm: number): void {
    this.#commit = hs.commit;
    this.#term = hs.term;
    if (appliedTerm === hs.term) this.#promoteLeases();
  }

  /**
   * Leases: a new leader counts every lease's remaining TTL from now (checkpointed TTLs included), but only
   * once it has applied an entry of its own term, so every revoke of an earlier term is applied first (the
   * lessor's contract). Promoted at once, it renewed a lease whose revoke from its previous term was still
   * in the log, and the key went away right after the acknowledged renewal (production-node seed 7502).
   */
  #promoteLeases(): void {
    if (!this.#isLeader || this.#leasesPromoted) return;
    const p = this.#h.parts;
    this.#leasesPromoted = true;
    this.#h.state().lessor.promote(schedulerOf(p).nowMs(), { extendMs: p.electionMs });
    for (const w of this.#leaseWaiters.splice(0)) w.resolve();
  }

  /** Resolves once this leader's lessor is promoted (fails with notLeader if it loses leadership first). */
  leasesReady(): Promise<void> {
    if (!this.#isLeader) return Promise.reject(new EtcdError('notLeader'));
    if (this.#leasesPromoted) return Promise.resolve();
    return new Promise((resolve, reject) => this.#leaseWaiters.push({ resolve, reject }));
  }

  /** The member stops: renewals waiting for the lessor fail. */
  failLeaseWaiters(error: unknown): void {
    for (const w of this.#leaseWaiters.splice(0)) w.reject(error);
  }

  onSoftState(s: SoftState): void {
    const p = this.#h.parts;
    const status = this.#h.driver().status();
    this.#term = status.term;
    const wasLeader = this.#isLeader;
    this.#isLeader = s.role === 'leader';
    if (s.leader !== this.#leader) {
      const hadLeader = this.#leader !== 0n;
      this.#leader = s.leader;
      if (hadLeader) this.#h.reads.onLeaderChange(new EtcdError('leaderChanged'));
      if (s.leader !== 0n) p.metrics.leaderChanges.inc();
      p.logger.info('leader changed', { leader: hex(s.leader), term: status.term });
      for (const l of this.#leaderListeners) l(s.leader);
    }
    if (!this.#isLeader && wasLeader) {
      if (this.#leasesPromoted) this.#h.state().lessor.demote();
      this.#leasesPromoted = false;
      this.failLeaseWaiters(new EtcdError('notLeader'));
    }
  }
}
