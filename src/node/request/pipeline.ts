/**
 * The request pipeline of the KV, Lease and Cluster services: validate → wait for a leader → (quota) →
 * stamp with the caller's auth → propose with a typed result, or read after a linearizable barrier.
 */
import type { CompactionRequest, DeleteRangeRequest, DeleteRangeResponse, PutRequest, PutResponse, RangeRequest, RangeResponse, TxnRequest, TxnResponse } from '../../mvcc/types.js';
import type { LeaseGrantResult, LeaseTimeToLiveResult, Member, MemberAddResult, RequestContext } from '../api-types.js';
import type { ServerAuth } from '../access/server-auth.js';
import type { ClusterOps } from '../membership/cluster-ops.js';
import type { LeaderForward } from '../leadership/leader-forward.js';
import type { EtcdServerParts } from '../etcd-server-parts.js';
import { EtcdError } from '../errors.js';
import type { ReadIndexBatcher } from './read-index.js';
import { checkDeleteRange, checkPut, checkRange, checkTxn } from './validate.js';
import { awaitLeader, checkAlive, type LeaderWaitHost, type RequestBarrier } from './leader-wait.js';
import { checkQuota, reclaimOrRefuse, txnBytes, withinQuota, type QuotaHost } from './quota.js';
import type { ProposeResult } from './propose-results.js';
import type { RaftRequest } from '../driver/raft-request.js';
import { isReadOnlyTxn } from './txn-writes.js';

export interface RequestHost extends LeaderWaitHost, QuotaHost {
  /** etcd --max-request-bytes and --max-txn-ops: the only parts the pipeline reads itself. */
  parts: Pick<EtcdServerParts, 'requestLimits'>;
  auth: ServerAuth;
  reads: ReadIndexBatcher;
  barrier: RequestBarrier;
  forward: LeaderForward;
  cluster: ClusterOps;
  /** Resolves once this leader's lessor counts expiries (Leadership.leasesReady). */
  leasesReady(): Promise<void>;
}

export class RequestPipeline {
  readonly #h: RequestHost;

  constructor(host: RequestHost) {
    this.#h = host;
  }

  checkAlive(ctx: RequestContext): void {
    checkAlive(this.#h, ctx);
  }

  awaitLeader(ctx: RequestContext): Promise<void> {
    return awaitLeader(this.#h, ctx);
  }

  /** Resolves once a local read reflects every write acknowledged before the call (ReadIndex). */
  linearizableBarrier(ctx: RequestContext): Promise<void> {
    return this.#h.barrier.linearizableBarrier(ctx);
  }

  // ---- KV ----

  async range(req: RangeRequest, ctx: RequestContext): Promise<RangeResponse> {
    checkRange(req);
    if (!req.serializable) await this.linearizableBarrier(ctx);
    else checkAlive(this.#h, ctx);
    const ai = await this.#h.auth.gate.checkRead(ctx, req.key, req.rangeEnd);
    const r = this.#h.state().store.range(req);
    this.#h.auth.gate.afterRead(ai);
    return r;
  }

  /**
   * The common case costs one promise, the proposer's wait (issue 34): with a leader known, room in the quota
   * and no auth to ask, every step is synchronous; only a step that must wait (for a leader, a reclaim, a
   * token check) chains a promise. The order of the steps is the same either way.
   */
  put(req: PutRequest, ctx: RequestContext): Promise<PutResponse> {
    const bytes = req.key.length + req.value.length;
    const proposal = { kind: 'put' as const, put: req };
    try {
      checkPut(req, this.#h.parts.requestLimits?.requestBytesMax);
      if (this.#leaderNow(ctx)) {
        if (withinQuota(this.#h, bytes)) return this.#stampAndPropose(proposal, ctx);
        return reclaimOrRefuse(this.#h, bytes).then(() => this.#stampAndPropose(proposal, ctx));
      }
    } catch (error) {
      return Promise.reject(error);
    }
    return awaitLeader(this.#h, ctx)
      .then(() => checkQuota(this.#h, bytes))
      .then(() => this.#stampAndPropose(proposal, ctx));
  }

  deleteRange(req: DeleteRangeRequest, ctx: RequestContext): Promise<DeleteRangeResponse> {
    const proposal = { kind: 'deleteRange' as const, deleteRange: req };
    try {
      checkDeleteRange(req, this.#h.parts.requestLimits?.requestBytesMax);
      if (this.#leaderNow(ctx)) return this.#stampAndPropose(proposal, ctx);
    } catch (error) {
      return Promise.reject(error);
    }
    return awaitLeader(this.#h, ctx).then(() => this.#stampAndPropose(proposal, ctx));
  }

  /** awaitLeader's synchronous part: throws on a stopped member (or a required leader missing); true with a leader. */
  #leaderNow(ctx: RequestContext): boolean {
    checkAlive(this.#h, ctx);
    return this.#h.hasLeader();
  }

  /** Stamps with the caller's auth (a promise only when auth is enabled) and proposes. */
  #stampAndPropose<R extends RaftRequest>(req: R, ctx: RequestContext): Promise<ProposeResult<R>> {
    const stamped = this.#h.auth.stamp(req, ctx);
    if (stamped instanceof Promise) return stamped.then((s) => this.#h.proposer.propose(s));
    return this.#h.proposer.propose(stamped);
  }

  /** A write txn takes put's synchronous path (kube-apiserver writes with Txn); a read-only one reads locally. */
  txn(req: TxnRequest, ctx: RequestContext): Promise<TxnResponse> {
    try {
      checkTxn(req, this.#h.parts.requestLimits?.txnOpsMax, this.#h.parts.requestLimits?.requestBytesMax);
      if (!isReadOnlyTxn(req) && this.#leaderNow(ctx)) {
        const bytes = txnBytes(req);
        const proposal = { kind: 'txn' as const, txn: req };
        if (withinQuota(this.#h, bytes)) return this.#stampAndPropose(proposal, ctx);
        return reclaimOrRefuse(this.#h, bytes).then(() => this.#stampAndPropose(proposal, ctx));
      }
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#txnWaiting(req, ctx);
  }

  /** txn after checkTxn, when it must wait: for a leader, or for a linearizable read. */
  async #txnWaiting(req: TxnRequest, ctx: RequestContext): Promise<TxnResponse> {
    await awaitLeader(this.#h, ctx);
    if (isReadOnlyTxn(req)) {
      // etcd serves read-only txns without Raft: a linearizable barrier, then a local evaluation.
      await this.linearizableBarrier(ctx);
      const ai = await this.#h.auth.gate.checkLocalTxn(ctx, req);
      const r = this.#h.state().store.txn(req);
      this.#h.auth.gate.afterRead(ai);
      return r;
    }
    await checkQuota(this.#h, txnBytes(req));
    return this.#stampAndPropose({ kind: 'txn', txn: req }, ctx);
  }

  async compact(req: CompactionRequest, ctx: RequestContext): Promise<{ revision: number }> {
    await awaitLeader(this.#h, ctx);
    const result = await this.#h.proposer.propose(await this.#h.auth.stamp({ kind: 'compact', revision: req.revision, physical: req.physical }, ctx));
    if (req.physical) await result.physicalDone;
    return { revision: this.#h.state().store.revision };
  }

  // ---- Lease ----

  async leaseGrant(req: { ttlSeconds: number; id: bigint }, ctx: RequestContext): Promise<LeaseGrantResult> {
    await awaitLeader(this.#h, ctx);
    // The proposer picks the id, so apply stays deterministic (etcd: reqIDGen).
    let id = req.id;
    while (id === 0n) {
      const candidate = BigInt.asIntN(64, this.#h.proposer.nextId() ^ (this.#h.memberId << 40n)) & 0x7fff_ffff_ffff_ffffn;
      if (!this.#h.state().lessor.exists(candidate)) id = candidate;
    }
    return this.#h.proposer.propose(await this.#h.auth.stamp({ kind: 'leaseGrant', leaseId: id, ttlSeconds: req.ttlSeconds }, ctx));
  }

  async leaseRevoke(id: bigint, ctx: RequestContext): Promise<{ revision: number }> {
    await awaitLeader(this.#h, ctx);
    // The token first: etcd judges it before the request reaches Raft, where an unknown lease is found.
    const stamped = await this.#h.auth.stamp({ kind: 'leaseRevoke', leaseId: id }, ctx);
    if (!this.#h.state().lessor.exists(id)) throw new EtcdError('leaseNotFound');
    await this.#h.proposer.propose(stamped, ctx.signal);
    return { revision: this.#h.state().store.revision };
  }

  async leaseKeepAlive(id: bigint, ctx: RequestContext): Promise<number> {
    await awaitLeader(this.#h, ctx);
    return this.#h.forward.onLeader('leaseKeepAlive', { id }, async () => {
      await this.#h.leasesReady();
      return this.#h.state().lessor.renew(id, this.#h.scheduler.nowMs());
    });
  }

  async leaseTimeToLive(id: bigint, keys: boolean, ctx: RequestContext): Promise<LeaseTimeToLiveResult> {
    await awaitLeader(this.#h, ctx);
    await this.#h.auth.gate.checkLeaseRead(ctx, id);
    return this.#h.forward.onLeader('leaseTimeToLive', { id, keys }, () => this.#h.state().lessor.timeToLive(id, this.#h.scheduler.nowMs(), keys));
  }

  async leaseLeases(ctx: RequestContext): Promise<bigint[]> {
    await this.linearizableBarrier(ctx);
    return this.#h.state().lessor.leases().map((l: { id: bigint }) => l.id);
  }

  // ---- Cluster ----

  async memberAdd(req: { peerUrls: string[]; isLearner: boolean }, ctx: RequestContext): Promise<MemberAddResult> {
    await this.#adminWithLeader(ctx);
    return this.#h.cluster.memberAdd(req);
  }

  async memberRemove(id: bigint, ctx: RequestContext): Promise<Member[]> {
    await this.#adminWithLeader(ctx);
    return this.#h.cluster.memberRemove(id);
  }

  async memberUpdate(req: { id: bigint; peerUrls: string[] }, ctx: RequestContext): Promise<Member[]> {
    await this.#adminWithLeader(ctx);
    return this.#h.cluster.memberUpdate(req);
  }

  async memberList(linearizable: boolean, ctx: RequestContext): Promise<Member[]> {
    if (linearizable) await this.linearizableBarrier(ctx);
    return this.#h.state().membership.list();
  }

  async memberPromote(id: bigint, ctx: RequestContext): Promise<Member[]> {
    await this.#adminWithLeader(ctx);
    return this.#h.cluster.memberPromote(id);
  }

  async #adminWithLeader(ctx: RequestContext): Promise<void> {
    await awaitLeader(this.#h, ctx);
    await this.#h.auth.gate.checkAdmin(ctx);
  }
}
