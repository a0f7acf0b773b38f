/**
 * Work that only the leader may do (lease renewals and TTL reads, since the leader owns lease expiry):
 * run here when this member leads, else forwarded over the peer transport; and the leader's side of those
 * forwarded peer requests.
 */
import type { Scheduler } from '../../base/scheduler.js';
import { hex } from '../../base/hex.js';
import type { ClusterOps } from '../membership/cluster-ops.js';
import { EtcdError } from '../errors.js';
import type { Logger } from '../../config/log.js';
import type { ServerState } from '../apply/server-state.js';
import type { PeerCall, PeerMethod, PeerPayload, PeerResults, PeerRpc } from '../peer-rpc.js';

export interface LeaderForwardHost {
  memberId: bigint;
  isLeader(): boolean;
  leader(): bigint;
  stopped(): boolean;
  state(): ServerState;
  cluster: ClusterOps;
  logger: Logger;
  scheduler: Scheduler;
  /** Resolves once this leader's lessor counts expiries (Leadership.leasesReady). */
  leasesReady(): Promise<void>;
  peerRequest: PeerCall;
  onRemoved(): void;
  /** Times each hash at a revision (maintenance/timed-hash.ts). */
  timedHashKV<T>(run: () => Promise<T>): Promise<T>;
}

export class LeaderForward {
  readonly #h: LeaderForwardHost;

  constructor(host: LeaderForwardHost) {
    this.#h = host;
  }

  /** Run `local` on the leader: here if this member leads, else forwarded over the peer transport. */
  async onLeader<M extends PeerMethod>(method: M, payload: PeerPayload<M>, local: () => PeerResults[M] | Promise<PeerResults[M]>): Promise<PeerResults[M]> {
    if (this.#h.isLeader()) return local();
    const leader = this.#h.leader();
    if (leader === 0n) throw new EtcdError('noLeader');
    const member = this.#h.state().membership.get(leader);
    const url = member?.peerUrls[0];
    if (url === undefined) throw new EtcdError('noLeader');
    return this.#h.peerRequest(url, method, payload);
  }

  /** Peer requests forwarded to this member (as the leader). */
  async handlePeerRequest(rpc: PeerRpc): Promise<unknown> {
    const state = this.#h.state();
    switch (rpc.method) {
      case 'removed':
        // Only a member that has applied our removal sends this; the handshake proved it knows the token.
        if (rpc.payload.id === this.#h.memberId && !this.#h.stopped()) {
          this.#h.logger.warn('this member was removed from the cluster; stopping', { member: hex(this.#h.memberId) });
          this.#h.scheduler.soon(() => this.#h.onRemoved());
        }
        return {};
      case 'leaseKeepAlive':
        await this.#h.leasesReady();
        return state.lessor.renew(rpc.payload.id, this.#h.scheduler.nowMs());
      case 'hashKV':
        return this.#h.timedHashKV(() => state.store.hashKV(rpc.payload.revision)).then((h) => ({ hash: h.hash, compactRevision: h.compactRevision, revision: h.hashRevision }));
      case 'leaseTimeToLive':
        if (!this.#h.isLeader()) throw new EtcdError('notLeader');
        return state.lessor.timeToLive(rpc.payload.id, this.#h.scheduler.nowMs(), rpc.payload.keys);
      default:
        return this.#h.cluster.handlePeerRequest(rpc);
    }
  }
}
