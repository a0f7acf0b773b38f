/**
 * The etcetera member: Raft driver + durable log + replicated state + peer transport, serving the EtcdApi
 * that the gRPC services (and embedding hosts) call. This class is the facade and the wiring; the parts:
 * - driver/: the Raft driver loop (time, disk, network) and the entry envelope;
 * - apply/: committed entries into state, flushes, snapshots (ApplyLoop);
 * - request/: the pipeline of a client request — validation, leader wait, quota, propose, wait, ReadIndex;
 * - membership/, leadership/ (with leader forwarding), peer-rpc.ts (the port to peers), corruption/;
 * - access/: tokens, the auth gate, the Auth API; periodic/: the timed work (leader loops, watch resync,
 *   corruption check, auto-compaction), so this class starts no timer of its own;
 * - maintenance/: the Maintenance service. The README's "Design in one page" maps every folder.
 * The driver is built before this class (main/member.ts) and started by start().
 *
 * Writes: validate → propose through Raft (followers forward to the leader inside Raft) → wait for this
 * member to apply the entry → answer with the apply result. Linearizable reads: ReadIndex (batched), wait
 * for the applied index, read locally. Serializable reads: local. Lease keepalives and member changes run on
 * the leader; a follower forwards them over the peer transport.
 */
import type { TimerHandle } from '../base/scheduler.js';
import { hex } from '../base/hex.js';
import { WatchHub } from '../mvcc/watch-hub.js';
import type { ReadState, SoftState } from '../raft/types.js';
import type { AlarmMember, AlarmType, CompactionRequest, DeleteRangeRequest, DeleteRangeResponse, Event as MvccEvent, PutRequest, PutResponse, RangeRequest, RangeResponse, TxnRequest, TxnResponse } from '../mvcc/types.js';
import type { WriteListenOptions } from '../mvcc/watch-types.js';
import type {
  EtcdApi, HashKvResult, HashResult, LeaseGrantResult, LeaseTimeToLiveResult, Member, MemberAddResult,
  RequestContext, ResponseHeader, SnapshotSource, StatusResult, WatchSink, WatchStream,
} from './server-api.js';
import { AppliedWait } from './request/applied-wait.js';
import { ApplyLoop } from './apply/apply-loop.js';
import { ClusterOps } from './membership/cluster-ops.js';
import { LeaderForward } from './leadership/leader-forward.js';
import { Leadership } from './leadership/leadership.js';
import { peerRpcOf } from './peer-rpc.js';
import { schedulerOf, type EtcdServerParts } from './etcd-server-parts.js';
import { tickScheduler } from './driver/tick-wheel.js';
import { HeartbeatWatch } from './driver/heartbeat-watch.js';
import { EtcdError } from './errors.js';
import { LeaderLoops } from './periodic/leader-loops.js';
import { MaintenanceOps } from './maintenance/maintenance-ops.js';
import { Proposer } from './request/proposer.js';
import type { DriverApp, DriverTransport, RaftDriver } from './driver/raft-driver.js';
import { ReadIndexBatcher } from './request/read-index.js';
import { RequestPipeline } from './request/pipeline.js';
import { requestTimeoutMs } from './request/timeouts.js';
import { applyHost, authHost, clusterHost, forwardHost, loopsHost, maintenanceHost, requestHost, type ServerCore } from './server-hosts.js';
import type { ServerState } from './apply/server-state.js';
import { StoreView } from './apply/store-view.js';
import { PeriodicWork } from './periodic/periodic-work.js';
import { dropOneEvent } from '../config/test-faults.js';
import { createServerAuth, type ServerAuth } from './access/server-auth.js';
import { RequestBarrier } from './request/leader-wait.js';
import { AppliedConf } from './apply/applied-conf.js';

export { electionTicksOf } from './apply/catch-up.js';
export { backendBatchIntervalMs } from './apply/apply-loop.js';
export { etcdVersion } from './maintenance/maintenance-ops.js';
export { leaderWaitMs, requestTimeoutMs } from './request/timeouts.js';
export type { EtcdServerParts } from './etcd-server-parts.js';

export class EtcdServer implements EtcdApi {
  readonly memberId: bigint;
  clusterId: bigint;
  readonly #p: EtcdServerParts;
  readonly #driver: RaftDriver;
  #state: ServerState;
  readonly #storeView: StoreView;
  readonly #hub: WatchHub;
  readonly #proposer: Proposer;
  readonly #appliedWait = new AppliedWait();
  readonly #conf = new AppliedConf();
  readonly #reads: ReadIndexBatcher;
  readonly #leadership: Leadership;
  readonly #cluster: ClusterOps;
  readonly #loops: LeaderLoops;
  readonly #apply: ApplyLoop;
  readonly #forward: LeaderForward;
  readonly #maintenance: MaintenanceOps;
  readonly #requests: RequestPipeline;
  readonly #auth: ServerAuth;
  #stopped = false;
  /** The leadership hand-over of a stop, run once (handOver()). */
  #handOver: Promise<void> | undefined;
  readonly #periodic: PeriodicWork;

  /** The driver is built first (from the restored node and the log) and started by start(). */
  constructor(parts: EtcdServerParts, driver: RaftDriver) {
    this.#p = parts;
    this.#driver = driver;
    this.memberId = parts.memberId;
    this.clusterId = parts.clusterId;
    this.#state = parts.state;
    this.#storeView = new StoreView(parts.state.store);
    this.#hub = new WatchHub(this.#storeView);
    this.#reads = new ReadIndexBatcher({
      request: (ctx) => this.#driver.readIndex(ctx),
      appliedWait: this.#appliedWait,
      retryMs: 500,
      timeoutMs: requestTimeoutMs(parts.electionMs),
      timeoutError: () => new EtcdError('timeout'),
      scheduler: schedulerOf(parts),
      onSlow: () => parts.metrics.slowReadIndexes.inc(),
      onFailed: () => parts.metrics.readIndexesFailed.inc(),
    });
    this.#leadership = new Leadership({ parts, reads: this.#reads, driver: this.#driver, state: () => this.#state });
    this.#proposer = new Proposer(
      {
        propose: (data) => this.#driver.propose(data),
        applyLag: () => this.#leadership.commit - this.#appliedWait.applied,
        hasLeader: () => this.hasLeader(),
        leaderElectedMs: () => this.#leadership.leaderElectedMs,
      },
      { memberId: parts.memberId, bootTimeMs: schedulerOf(parts).wallMs(), timeoutMs: requestTimeoutMs(parts.electionMs), electionMs: parts.electionMs, scheduler: schedulerOf(parts) },
    );
    const barrier = new RequestBarrier({
      stopped: () => this.#stopped,
      hasLeader: () => this.#leadership.hasLeader(),
      onLeaderChange: (listener) => this.#leadership.onLeaderChange(listener),
      electionMs: parts.electionMs,
      scheduler: schedulerOf(parts),
      reads: this.#reads,
      skipReadIndex: parts.unsafeTestFaults?.has('skip-read-index') === true,
    });
    const core: ServerCore = {
      memberId: this.memberId,
      clusterId: () => this.clusterId,
      parts,
      leadership: this.#leadership,
      appliedWait: this.#appliedWait,
      proposer: this.#proposer,
      reads: this.#reads,
      hub: this.#hub,
      state: () => this.#state,
      driver: this.#driver,
      stopped: () => this.#stopped,
      conf: this.#conf,
      barrier,
    };
    this.#cluster = new ClusterOps(clusterHost(core));
    this.#loops = new LeaderLoops(loopsHost(core, this.#cluster));
    this.#auth = createServerAuth(authHost(core), parts.auth);
    this.#apply = new ApplyLoop(applyHost(core, this.#cluster, {
      setState: (state) => {
        this.#state = state;
      },
      rebindViews: () => {
        this.#storeView.rebind(this.#state.store);
        this.#auth.rebind(this.#state.auth);
        this.#hub.restore?.();
      },
    }));
    this.#forward = new LeaderForward(forwardHost(core, this.#cluster));
    this.#maintenance = new MaintenanceOps(maintenanceHost(core, this.#auth));
    this.#requests = new RequestPipeline(requestHost(core, { auth: this.#auth, forward: this.#forward, cluster: this.#cluster }));
    this.#periodic = new PeriodicWork({
      scheduler: tickScheduler(schedulerOf(parts), driver.ticks),
      syncWatches: () => this.#hub.sync(),
      checkCorruption: () => this.checkCorruption(),
      ...(parts.autoCompaction !== undefined ? { autoCompaction: parts.autoCompaction } : {}),
      compactor: {
        isLeader: () => this.#leadership.isLeader,
        revision: () => this.#state.store.revision,
        compactRevision: () => this.#state.store.compactRevision,
        compact: async (revision) => void (await this.#proposer.propose({ kind: 'compact', revision, physical: false })),
        logger: parts.logger,
      },
    });
  }

  get authApi(): ServerAuth['api'] {
    return this.#auth.api;
  }

  /**
   * Start serving: the apply loop from `appliedIndex`, then the driver, which hands its Readies to `app` (this
   * server's driverApp(), or a wrapper of it that observes them: the simulator's) and its messages to `peers`.
   */
  start(o: { appliedIndex: number; snapshotIndex: number; peers: DriverTransport; app?: DriverApp }): void {
    const driver = this.#driver;
    this.#apply.start(driver, o.appliedIndex, o.snapshotIndex);
    this.#p.syncPeers(this.#state.membership.list());
    const heartbeats = new HeartbeatWatch({
      heartbeatMs: this.#p.heartbeatMs,
      nowMs: () => schedulerOf(this.#p).nowMs(),
      onLate: (to, exceededMs) => {
        this.#p.metrics.heartbeatSendFailures.inc();
        this.#p.logger.warn('leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk', {
          to: hex(to), 'heartbeat-interval': `${this.#p.heartbeatMs}ms`, 'expected-duration': `${2 * this.#p.heartbeatMs}ms`, 'exceeded-duration': `${exceededMs.toFixed(1)}ms`,
        });
      },
    });
    driver.start(o.app ?? this.driverApp(), heartbeats.wrap(o.peers));
    this.#apply.campaignIfAlone();
    this.#loops.start();
    this.#periodic.start();
  }

  get state(): ServerState {
    return this.#state;
  }

  /** Proposals waiting to be applied (etcd_server_proposals_pending). */
  get pendingProposals(): number {
    return this.#proposer.pending;
  }

  get applied(): number {
    return this.#appliedWait.applied;
  }

  /**
   * Periodic work of the layers above (the disk watch, the client port's leader check) on the Raft tick: in
   * the tick's event-loop turn, not a wake-up of its own (driver/tick-wheel.ts). Runs while the driver does.
   */
  every(ms: number, fn: () => void): TimerHandle {
    return this.#periodic.every(ms, fn);
  }

  get isLeader(): boolean {
    return this.#leadership.isLeader;
  }

  get leaderId(): bigint {
    return this.#leadership.leader;
  }

  get term(): number {
    return this.#leadership.term;
  }

  get driver(): RaftDriver {
    return this.#driver;
  }

  onLeaderChange(listener: (leader: bigint) => void): () => void {
    return this.#leadership.onLeaderChange(listener);
  }

  // ---- Driver callbacks ----

  /** Times apply waited for the backend (etcetera_apply_holds_total). */
  applyHolds(): number {
    return this.#apply.holds;
  }

  driverApp(): DriverApp {
    return {
      applyHold: () => this.#apply.applyHold(),
      applyEntries: (entries: Parameters<ApplyLoop['applyEntries']>[0]) => this.#apply.applyEntries(entries),
      restoreSnapshot: (snapshot: Parameters<ApplyLoop['restoreSnapshot']>[0]) => this.#apply.restoreSnapshot(snapshot),
      onSoftState: (s: SoftState, previous: SoftState) => this.#leadership.onSoftState(s, previous),
      onReadStates: (states: ReadState[]) => this.#reads.onReadStates(states),
      onStable: (index: number) => this.#apply.onStable(index),
      onFatal: (error: unknown) => this.#p.onFatal(error),
    };
  }

  /** The stream a follower's snapshot is built from (ApplyLoop.snapshotForFollower). */
  snapshotForFollower(): ReturnType<ApplyLoop['snapshotForFollower']> {
    return this.#apply.snapshotForFollower();
  }

  // ---- EtcdApi: common ----

  header(revision?: number): ResponseHeader {
    return {
      clusterId: this.clusterId,
      memberId: this.memberId,
      revision: revision ?? this.#state.store.revision,
      raftTerm: this.#leadership.term,
    };
  }

  hasLeader(): boolean {
    return this.#leadership.hasLeader();
  }

  /** A learner serves only Status, serializable reads and Snapshot (etcd's rpc not supported for learner). */
  isLearner(): boolean {
    return this.#conf.learners.includes(this.memberId);
  }

  /** Whether member `id` is a witness (src/raft/witness.ts): it is sent snapshot metadata, never the backend. */
  isWitness(id: bigint): boolean {
    return this.#conf.witnesses.includes(id);
  }

  // ---- KV, Lease, Cluster (node/request/pipeline.ts) ----

  /** Resolves once a local read reflects every write acknowledged before the call (ReadIndex). */
  linearizableBarrier(ctx: RequestContext): Promise<void> {
    return this.#requests.linearizableBarrier(ctx);
  }

  range(req: RangeRequest, ctx: RequestContext): Promise<RangeResponse> {
    return this.#requests.range(req, ctx);
  }

  put(req: PutRequest, ctx: RequestContext): Promise<PutResponse> {
    return this.#requests.put(req, ctx);
  }

  deleteRange(req: DeleteRangeRequest, ctx: RequestContext): Promise<DeleteRangeResponse> {
    return this.#requests.deleteRange(req, ctx);
  }

  txn(req: TxnRequest, ctx: RequestContext): Promise<TxnResponse> {
    return this.#requests.txn(req, ctx);
  }

  compact(req: CompactionRequest, ctx: RequestContext): Promise<{ revision: number }> {
    return this.#requests.compact(req, ctx);
  }

  leaseGrant(req: { ttlSeconds: number; id: bigint }, ctx: RequestContext): Promise<LeaseGrantResult> {
    return this.#requests.leaseGrant(req, ctx);
  }

  leaseRevoke(id: bigint, ctx: RequestContext): Promise<{ revision: number }> {
    return this.#requests.leaseRevoke(id, ctx);
  }

  leaseKeepAlive(id: bigint, ctx: RequestContext): Promise<number> {
    return this.#requests.leaseKeepAlive(id, ctx);
  }

  leaseTimeToLive(id: bigint, keys: boolean, ctx: RequestContext): Promise<LeaseTimeToLiveResult> {
    return this.#requests.leaseTimeToLive(id, keys, ctx);
  }

  leaseLeases(ctx: RequestContext): Promise<bigint[]> {
    return this.#requests.leaseLeases(ctx);
  }

  memberAdd(req: { peerUrls: string[]; isLearner: boolean }, ctx: RequestContext): Promise<MemberAddResult> {
    return this.#requests.memberAdd(req, ctx);
  }

  memberRemove(id: bigint, ctx: RequestContext): Promise<Member[]> {
    return this.#requests.memberRemove(id, ctx);
  }

  memberUpdate(req: { id: bigint; peerUrls: string[] }, ctx: RequestContext): Promise<Member[]> {
    return this.#requests.memberUpdate(req, ctx);
  }

  memberList(linearizable: boolean, ctx: RequestContext): Promise<Member[]> {
    return this.#requests.memberList(linearizable, ctx);
  }

  memberPromote(id: bigint, ctx: RequestContext): Promise<Member[]> {
    return this.#requests.memberPromote(id, ctx);
  }

  /** Peer requests forwarded to this member (as the leader), and joiners' requests (node/peer-rpc.ts). */
  async handlePeerRequest(method: string, payload: unknown): Promise<unknown> {
    return this.#forward.handlePeerRequest(peerRpcOf(method, payload));
  }

  // ---- Watch ----

  openWatchStream(sink: WatchSink, ctx: RequestContext): WatchStream {
    if (this.#p.unsafeTestFaults?.has('drop-watch-event') === true) return this.#auth.guardWatch(this.#hub.openStream(dropOneEvent(sink.send)), sink, ctx);
    return this.#auth.guardWatch(this.#hub.openStream(sink.send), sink, ctx);
  }

  // ---- Maintenance (node/maintenance/maintenance-ops.ts) ----

  alarm(req: { action: 'get' | 'activate' | 'deactivate'; memberId: bigint; alarm: AlarmType }, ctx: RequestContext): Promise<AlarmMember[]> {
    return this.#maintenance.alarm(req, ctx);
  }

  async status(): Promise<StatusResult> {
    return this.#maintenance.status();
  }

  defragment(ctx: RequestContext): Promise<void> {
    return this.#maintenance.defragment(ctx);
  }

  hash(ctx: RequestContext): Promise<HashResult> {
    return this.#maintenance.hash(ctx);
  }

  hashKV(revision: number, ctx: RequestContext): Promise<HashKvResult> {
    return this.#maintenance.hashKV(revision, ctx);
  }

  snapshot(ctx: RequestContext): Promise<SnapshotSource> {
    return this.#maintenance.snapshot(ctx);
  }

  moveLeader(targetId: bigint, ctx: RequestContext): Promise<void> {
    return this.#maintenance.moveLeader(targetId, ctx);
  }

  /**
   * Every applied write's events, from the current store (the listener outlives a snapshot restore). Say
   * `wantsPrevKv: () => false` unless the events' previous values are needed: reading them costs a lookup.
   */
  onWrite(listener: (revision: number, events: MvccEvent[]) => void, options?: WriteListenOptions): () => void {
    return this.#storeView.onWrite(listener, options);
  }

  /** Ask Raft to hand leadership to `target`; resolves once it leads, or fails after `timeoutMs`. */
  transferLeadership(target: bigint, timeoutMs: number): Promise<void> {
    return this.#maintenance.transferLeadership(target, timeoutMs);
  }

  /** One round of the leader's corruption check; returns the members found corrupt. */
  checkCorruption(): Promise<bigint[]> {
    return this.#maintenance.checkCorruption();
  }

  // ---- Lifecycle ----

  /**
   * The first step of a graceful stop: a leader hands leadership to the most caught-up voter (etcd's
   * TransferLeadership), bounded by two election timeouts. The member keeps serving as a follower, so requests
   * in flight finish through the new leader while the client port closes (member.ts runs that in between).
   */
  handOver(): Promise<void> {
    return (this.#handOver ??= this.#transferBeforeStop());
  }

  async #transferBeforeStop(): Promise<void> {
    if (this.#stopped || !this.#leadership.isLeader || this.#conf.voters.length <= 1) return;
    const target = this.#maintenance.bestTransferee();
    if (target === undefined) return;
    const t0 = schedulerOf(this.#p).nowMs();
    try {
      await this.transferLeadership(target, this.#p.electionMs * 2);
      this.#p.logger.info('leadership transferred before stopping', { to: hex(target), ms: schedulerOf(this.#p).nowMs() - t0 });
    } catch {
      this.#p.logger.warn('leadership transfer before stop timed out', { to: hex(target), ms: schedulerOf(this.#p).nowMs() - t0 });
    }
  }

  /** Graceful stop: hand over (when not done already), then fail what still waits, flush and stop. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    await this.handOver();
    this.#stopped = true;
    this.#loops.stop();
    this.#periodic.stop();
    this.#driver.stop();
    this.#proposer.failAll(new EtcdError('stopped'));
    this.#reads.failAll(new EtcdError('stopped'));
    this.#appliedWait.failAll(new EtcdError('stopped'));
    this.#leadership.failLeaseWaiters(new EtcdError('stopped'));
    this.#hub.close();
    this.#apply.stop();
    // Every applied entry was handed to the log before it was applied: once those saves are durable, all of
    // the applied state may be flushed (a failed log keeps the store at what is durable).
    const allDurable = await this.#driver.persisted().then(() => true, () => false);
    if (allDurable) this.#state.store.setDurableIndex(this.#appliedWait.applied);
    await this.#state.store.flush();
    await this.#state.store.idle();
  }
}
