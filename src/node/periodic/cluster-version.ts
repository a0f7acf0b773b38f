/**
 * The leader's cluster version monitor (etcd's monitorClusterVersions / decideClusterVersion): every
 * clusterVersionIntervalMs it takes each member's build as announced in its latest peer handshake, and
 * commits the lowest one's major.minor through Raft when it differs from the cluster version applied.
 *
 * Unlike etcd, which only raises the cluster version (a downgrade is its own procedure), the leader also
 * lowers it when it meets an older build: builds before 0.2 have no version gate of their own and keep running
 * beside the newer ones, so the cluster version must follow them down, and with it the data format written
 * (base/version.ts). A build that does check refuses to start below the cluster version recorded in its data.
 */
import { decideClusterVersion, unannouncedBuild, type MemberVersion } from '../../base/version.js';
import type { Logger } from '../../config/log.js';
import type { Membership } from '../membership/membership.js';
import type { Proposer } from '../request/proposer.js';

/** How often the leader decides (etcd: every 5 s; shorter here, an upgrade's last step waits for it). */
export const clusterVersionIntervalMs = 1000;

export interface ClusterVersionHost {
  isLeader(): boolean;
  memberId: bigint;
  membership(): Membership;
  proposer: Proposer;
  logger: Logger;
  self: MemberVersion;
  peers(): ReadonlyMap<bigint, MemberVersion | null>;
}

export class ClusterVersionMonitor {
  readonly #h: ClusterVersionHost;
  #proposing = false;

  constructor(host: ClusterVersionHost) {
    this.#h = host;
  }

  /** The build of each member: this one's, each peer's as announced, undefined for a peer not met yet. */
  builds(): Array<string | undefined> {
    const peers = this.#h.peers();
    return this.#h.membership().list().map((m) => {
      if (m.id === this.#h.memberId) return this.#h.self.build;
      const announced = peers.get(m.id);
      return announced === undefined ? undefined : (announced?.build ?? unannouncedBuild);
    });
  }

  tick(): void {
    if (this.#proposing || !this.#h.isLeader()) return;
    const decided = decideClusterVersion(this.builds());
    const current = this.#h.membership().clusterVersion;
    if (decided === undefined || decided === current) return;
    this.#proposing = true;
    const fields = { from: current ?? 'none', to: decided };
    this.#h.proposer
      .propose({ kind: 'clusterVersionSet', version: decided })
      .then(
        () => this.#h.logger.info('cluster version set', fields),
        (error: unknown) => this.#h.logger.debug('cluster version not set', { ...fields, error: String(error) }),
      )
      .finally(() => {
        this.#proposing = false;
      });
  }
}
