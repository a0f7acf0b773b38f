/**
 * Periodic work of a member, mostly the leader's: revoke expired leases and checkpoint remaining TTLs
 * through Raft, promote caught-up learners, publish this member's attributes, tick watch progress.
 * Time-based decisions are made here, outside apply, and replicated as entries.
 */
import { rootUser } from '../../auth/types.js';
import type { Scheduler, TimerHandle } from '../../base/scheduler.js';
import type { WatchHub } from '../../mvcc/watch-hub.js';
import { watchProgressIntervalMs } from '../../mvcc/watch-hub.js';
import type { ClusterOps } from '../membership/cluster-ops.js';
import type { Logger } from '../../config/log.js';
import type { Proposer } from '../request/proposer.js';
import type { ServerState } from '../apply/server-state.js';
import { ClusterVersionMonitor, clusterVersionIntervalMs } from './cluster-version.js';
import type { MemberVersion } from '../../base/version.js';

export interface LoopsHost {
  isLeader(): boolean;
  hasLeader(): boolean;
  state(): ServerState;
  proposer: Proposer;
  cluster: ClusterOps;
  memberId: bigint;
  name: string;
  clientUrls: string[];
  hub: WatchHub;
  logger: Logger;
  scheduler: Scheduler;
  /** etcd --experimental-watch-progress-notify-interval (default 10 minutes). */
  watchProgressIntervalMs?: number;
  /** This member's and its peers' announced versions (absent: no cluster version is decided). */
  versions?: { self: MemberVersion; peers(): ReadonlyMap<bigint, MemberVersion | null> };
}

/** etcd: leaseRevokeRate 1000/s; we revoke in batches each tick. */
export const leaseRevokesPerTickMax = 64;
export const leaseTickMs = 500;
/** etcd: lease checkpoint interval 5 minutes. */
export const leaseCheckpointIntervalMs = 5 * 60 * 1000;
export const learnerPromoteIntervalMs = 1000;

export class LeaderLoops {
  readonly #h: LoopsHost;
  #timers: TimerHandle[] = [];
  #published = false;
  #publishing = false;

  constructor(host: LoopsHost) {
    this.#h = host;
  }

  start(): void {
    this.#every(leaseTickMs, () => this.#leaseTick());
    this.#every(learnerPromoteIntervalMs, () => void this.#h.cluster.promoteCaughtUpLearners());
    this.#every(200, () => this.#publish());
    this.#every(this.#h.watchProgressIntervalMs ?? watchProgressIntervalMs, () => this.#h.hub.tickProgress());
    const versions = this.#h.versions;
    if (versions !== undefined) {
      const monitor = new ClusterVersionMonitor({
        ...versions,
        isLeader: () => this.#h.isLeader(),
        memberId: this.#h.memberId,
        membership: () => this.#h.state().membership,
        proposer: this.#h.proposer,
        logger: this.#h.logger,
      });
      this.#every(clusterVersionIntervalMs, () => monitor.tick());
    }
  }

  stop(): void {
    for (const t of this.#timers) t.cancel();
    this.#timers = [];
  }

  #every(ms: number, fn: () => void): void {
    this.#timers.push(this.#h.scheduler.every(ms, fn, { background: true }));
  }

  #leaseTick(): void {
    if (!this.#h.isLeader()) return;
    const state = this.#h.state();
    const lessor = state.lessor;
    const now = this.#h.scheduler.nowMs();
    // etcd revokes an expired lease as root (authStore.WithRoot): no user's permissions may keep it alive.
    // Unstamped, apply judged it as a request without a user and refused it: under auth, leases never expired.
    const asRoot = state.auth.enabled ? { auth: { username: rootUser, revision: state.auth.revision } } : {};
    for (const id of lessor.expired(now, leaseRevokesPerTickMax)) {
      this.#h.proposer.propose({ kind: 'leaseRevoke', leaseId: id, ...asRoot }).catch((error: unknown) => {
        this.#h.logger.debug('lease revoke not applied', { lease: id.toString(16), error: String(error) });
      });
    }
    const due = lessor.checkpointsDue(now, leaseRevokesPerTickMax);
    if (due.length > 0) {
      const checkpoints = due.map((c: { id: bigint; remainingTtlSeconds: number }) => ({
        leaseId: c.id,
        remainingTtlSeconds: c.remainingTtlSeconds,
      }));
      this.#h.proposer.propose({ kind: 'leaseCheckpoint', checkpoints }).catch(() => {});
    }
  }

  /** etcd's publish: once there is a leader, replicate this member's name and client URLs. */
  #publish(): void {
    if (this.#published || this.#publishing || !this.#h.hasLeader()) return;
    const m = this.#h.state().membership.get(this.#h.memberId);
    if (m !== undefined && m.name === this.#h.name && sameUrls(m.clientUrls, this.#h.clientUrls)) {
      // Nothing to replicate (a restart with the same name and URLs), but the line is still logged: etcd
      // publishes at every start, and tools wait for its "published" line (etcd's e2e harness among them).
      this.#published = true;
      this.#h.logger.info('published member attributes', { name: this.#h.name, clientUrls: this.#h.clientUrls, unchanged: true });
      return;
    }
    if (m === undefined) return; // not yet in the member list we have applied (a joining member catching up)
    this.#publishing = true;
    this.#h.proposer
      .propose({ kind: 'publish', memberId: this.#h.memberId, name: this.#h.name, clientUrls: this.#h.clientUrls })
      .then(
        () => {
          this.#published = true;
          this.#h.logger.info('published member attributes', { name: this.#h.name, clientUrls: this.#h.clientUrls });
        },
        () => {},
      )
      .finally(() => {
        this.#publishing = false;
      });
  }
}

function sameUrls(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((u, i) => u === b[i]);
}
