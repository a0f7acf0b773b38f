/**
 * The etcetera member: Raft driver + durable log + replicated state + peer transport, serving the EtcdApi
 * that the gRPC services (and embedding hosts) call.
 *
 * Writes: validate → propose through Raft (followers forward to the leader inside Raft) → wait for this
 * member to apply the entry → answer with the apply result. Linearizable reads: ReadIndex (batched), wait
 * for the applied index, read locally. Serializable reads: local. Lease keepalives and member changes run on
 * the leader; a follower forwards them over the peer transport.
 */
import { performance } from 'node:perf_hooks';
import { assert } from '../base/assert.js';
import { catchUpBytesMax, raftLogBytesMax, snapshotCatchUpEntries } from '../base/limits.js';
import type { Backend } from '../mvcc/backend.js';
import { WatchHub } from '../mvcc/watch-hub.js';
import { EntryType, type ConfChange, type ConfState, type Entry, type ReadState, type Snapshot, type SnapshotMeta, type SoftState } from '../raft/types.js';
import type { AlarmMember, AlarmType, CompactionRequest, DeleteRangeRequest, DeleteRangeResponse, PutRequest, PutResponse, RangeRequest, RangeResponse, TxnRequest, TxnResponse } from '../mvcc/types.js';
import type {
  EtcdApi, HashKvResult, HashResult, LeaseGrantResult, LeaseTimeToLiveResult, Member, MemberAddResult,
  RequestContext, ResponseHeader, SnapshotSource, StatusResult, WatchSink, WatchStream,
} from './api.js';
import { AppliedWait } from './applied-wait.js';
import { ClusterOps } from './cluster-ops.js';
import { decodeConfChange } from '../raft/conf.js';
import { EtcdError } from './errors.js';
import { maintenanceSnapshot } from '../backup/maintenance.js';
import { tmpdir } from 'node:os';
import type { Logger } from './log.js';
import { LeaderLoops } from './leader-loops.js';
import { Proposer } from './proposer.js';
import { decodeConfChangeContext, decodeRequest, type RaftRequest } from './raft-request.js';
import { pack, unpack } from './codec.js';
import type { RaftDriver } from './raft-driver.js';
import { ReadIndexBatcher } from './read-index.js';
import type { ServerState, StateOptions } from './server-state.js';
import { ServerState as State } from './server-state.js';
import { StoreView } from './store-view.js';
import { AutoCompactor, type AutoCompaction } from './auto-compactor.js';
import { droppedWatchResponseOrdinal, type TestFault } from './test-faults.js';
import { checkCorruption, corruptCheckIntervalMs, type HashAt } from './corruption-check.js';
import type { ServerMetrics } from './server-metrics.js';
import { checkDeleteRange, checkPut, checkRange, checkTxn } from './validate.js';
import { createServerAuth, type ServerAuth, type ServerAuthOptions } from './auth/server-auth.js';

export const etcdVersion = '3.5.17';

/** Meta key of the Raft configuration as of the consistent index (msgpack {voters, learners}). */
const confStateKey = new TextEncoder().encode('confState');
const latin1ConfStateKey = 'confState';

export interface EtcdServerParts {
  /** etcd --max-request-bytes and --max-txn-ops (default: etcd's defaults). */
  requestLimits?: { requestBytesMax: number; txnOpsMax: number };
  /** etcd --experimental-watch-progress-notify-interval. */
  watchProgressIntervalMs?: number;
  memberId: bigint;
  clusterId: bigint;
  name: string;
  clientUrls: string[];
  peerUrls: string[];
  backend: Backend;
  state: ServerState;
  stateOptions: StateOptions;
  logger: Logger;
  metrics: ServerMetrics;
  heartbeatMs: number;
  electionMs: number;
  snapshotCount: number;
  autoCompaction?: AutoCompaction;
  unsafeTestFaults?: Set<TestFault>;
  /** Where Maintenance.Snapshot builds its file (default the OS temp dir); `*.tmp` there is removed at start. */
  snapshotTempDir?: string;
  /** Persist a snapshot, then let the log release what it covers. */
  saveSnapshot(snapshot: Snapshot): Promise<void>;
  /** Received snapshot data (snapshot-data.ts): read to restore, removed once the backend holds it durably. */
  snapshotData: {
    source(meta: SnapshotMeta): Promise<(() => AsyncIterable<Uint8Array>) | undefined>;
    removeAll(): Promise<void>;
  };
  releaseLog(index: number): void;
  /** The peer transport's request RPC, for forwarding to the leader. */
  peerRequest(url: string, method: string, payload: unknown): Promise<unknown>;
  syncPeers(members: Member[]): void;
  onRemoved(): void;
  /** Best effort: tell a member removed by a committed change that it is out. */
  notifyRemoved(member: Member): void;
  onFatal(error: unknown): void;
  /** --auth-token, --auth-token-ttl, --bcrypt-cost, --client-cert-auth (defaults: etcd's). */
  auth?: ServerAuthOptions;
}

export class EtcdServer implements EtcdApi {
  readonly memberId: bigint;
  clusterId: bigint;
  readonly #p: EtcdServerParts;
  #driver!: RaftDriver;
  #state: ServerState;
  readonly #storeView: StoreView;
  readonly #hub: WatchHub;
  readonly #proposer: Proposer;
  readonly #appliedWait = new AppliedWait();
  readonly #reads: ReadIndexBatcher;
  readonly #cluster: ClusterOps;
  readonly #loops: LeaderLoops;
  #leader = 0n;
  #isLeader = false;
  #term = 0;
  #commit = 0;
  #appliedTerm = 0;
  #confVoters: bigint[] = [];
  #confLearners: bigint[] = [];
  #snapshotIndex = 0;
  #snapshotting = false;
  /** Entry bytes applied since the last snapshot: the in-memory Raft log grows by as much. */
  #bytesSinceSnapshot = 0;
  #stopped = false;
  #leaderListeners = new Set<(leader: bigint) => void>();
  #watchTimer: NodeJS.Timeout | undefined;
  #compactor: AutoCompactor | undefined;
  #corruptTimer: NodeJS.Timeout | undefined;
  #flushTimer: NodeJS.Timeout | undefined;
  readonly #auth: ServerAuth;
  /** The log is durable up to here (the store flushes no further); waiters for it, e.g. a snapshot. */
  #stableIndex = 0;
  #stableWaiters: { index: number; resolve: () => void }[] = [];

  constructor(parts: EtcdServerParts) {
    this.#p = parts;
    this.memberId = parts.memberId;
    this.clusterId = parts.clusterId;
    this.#state = parts.state;
    this.#storeView = new StoreView(parts.state.store);
    this.#hub = new WatchHub(this.#storeView);
    this.#proposer = new Proposer(
      {
        propose: (data) => this.#driver.propose(data),
        applyLag: () => this.#commit - this.#appliedWait.applied,
        hasLeader: () => this.hasLeader(),
      },
      { bootTimeMs: Date.now(), timeoutMs: requestTimeoutMs(parts.electionMs) },
    );
    this.#reads = new ReadIndexBatcher({
      request: (ctx) => this.#driver.readIndex(ctx),
      appliedWait: this.#appliedWait,
      retryMs: 500,
      timeoutMs: requestTimeoutMs(parts.electionMs),
      timeoutError: () => new EtcdError('timeout'),
      nowMs: () => performance.now(),
    });
    this.#cluster = new ClusterOps(this.#clusterHost());
    this.#loops = new LeaderLoops(this.#loopsHost());
    this.#auth = createServerAuth(this.#authHost(), parts.auth);
  }

  get authApi(): ServerAuth['api'] {
    return this.#auth.api;
  }

  /** Attach the driver (created after the server, since the driver calls back into it) and start. */
  start(driver: RaftDriver, appliedIndex: number, snapshotIndex: number): void {
    this.#driver = driver;
    this.#onStable(driver.node.stableIndex);
    this.#appliedWait.advance(appliedIndex);
    this.#snapshotIndex = snapshotIndex;
    const cs = driver.status().confState;
    this.#confVoters = cs.voters;
    this.#confLearners = cs.learners;
    this.#p.syncPeers(this.#state.membership.list());
    driver.start();
    this.#campaignIfAlone();
    this.#loops.start();
    this.#corruptTimer = setInterval(() => void this.checkCorruption(), corruptCheckIntervalMs);
    this.#corruptTimer.unref();
    if (this.#p.autoCompaction !== undefined) {
      this.#compactor = new AutoCompactor(
        {
          isLeader: () => this.#isLeader,
          revision: () => this.#state.store.revision,
          compactRevision: () => this.#state.store.compactRevision,
          compact: async (revision) => void (await this.#proposer.propose({ kind: 'compact', revision, physical: false })),
          nowMs: () => performance.now(),
          logger: this.#p.logger,
        },
        this.#p.autoCompaction,
      );
      this.#compactor.start();
    }
    this.#watchTimer = setInterval(() => this.#hub.sync(), 100);
    this.#watchTimer.unref();
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

  get isLeader(): boolean {
    return this.#isLeader;
  }

  get leaderId(): bigint {
    return this.#leader;
  }

  get term(): number {
    return this.#term;
  }

  get driver(): RaftDriver {
    return this.#driver;
  }

  onLeaderChange(listener: (leader: bigint) => void): () => void {
    this.#leaderListeners.add(listener);
    return () => this.#leaderListeners.delete(listener);
  }

  // ---- Driver callbacks ----

  driverApp() {
    return {
      applyEntries: (entries: Entry[]) => this.#applyEntries(entries),
      restoreSnapshot: (snapshot: Snapshot) => this.#restoreSnapshot(snapshot),
      onSoftState: (s: SoftState) => this.#onSoftState(s),
      onReadStates: (states: ReadState[]) => this.#reads.onReadStates(states),
      onStable: (index: number) => this.#onStable(index),
      onFatal: (error: unknown) => this.#p.onFatal(error),
    };
  }

  /** Entries are applied once committed, maybe before they are durable here: the store's flushes wait. */
  #onStable(index: number): void {
    // Applied state the last flush had to leave behind is flushed now (no later apply may come to do it).
    const heldBack = this.#appliedWait.applied > this.#stableIndex;
    this.#stableIndex = index;
    this.#state.store.setDurableIndex(index);
    if (heldBack) this.#scheduleFlush();
    if (this.#stableWaiters.length === 0) return;
    const due = this.#stableWaiters.filter((w) => w.index <= index);
    this.#stableWaiters = this.#stableWaiters.filter((w) => w.index > index);
    for (const w of due) w.resolve();
  }

  /** Resolves once the log is durable up to `index` (never, if the member stops first). */
  #whenStable(index: number): Promise<void> {
    if (index <= this.#stableIndex) return Promise.resolve();
    return new Promise((resolve) => this.#stableWaiters.push({ index, resolve }));
  }

  #onSoftState(s: SoftState): void {
    const status = this.#driver.status();
    this.#term = status.term;
    const wasLeader = this.#isLeader;
    this.#isLeader = s.role === 'leader';
    if (s.leader !== this.#leader) {
      const hadLeader = this.#leader !== 0n;
      this.#leader = s.leader;
      if (hadLeader) this.#reads.onLeaderChange(new EtcdError('leaderChanged'));
      if (s.leader !== 0n) this.#p.metrics.leaderChanges.inc();
      this.#p.logger.info('leader changed', { leader: hex(s.leader), term: status.term });
      for (const l of this.#leaderListeners) l(s.leader);
    }
    if (this.#isLeader && !wasLeader) {
      // Leases: the new leader counts every lease's remaining TTL from now (checkpointed TTLs included).
      this.#state.lessor.promote(performance.now(), { extendMs: this.#p.electionMs });
    } else if (!this.#isLeader && wasLeader) {
      this.#state.lessor.demote();
    }
  }

  #applyEntries(entries: Entry[]): void {
    const state = this.#state;
    for (const e of entries) {
      state.store.setConsistentIndex(e.index, e.term);
      if (e.type === EntryType.Normal) {
        if (e.data.length > 0) {
          const env = decodeRequest(e.data);
          const result = state.applier.applyRequest(e.index, env.req);
          this.#proposer.applied(env.id, result);
        }
      } else {
        this.#applyConfChange(e);
      }
      this.#appliedTerm = e.term;
      this.#bytesSinceSnapshot += e.data.length;
    }
    const last = entries[entries.length - 1]!;
    const hs = this.#driver.hardState;
    this.#commit = hs.commit;
    this.#term = hs.term;
    this.#appliedWait.advance(last.index);
    this.#scheduleFlush();
    const dueByCount = last.index - this.#snapshotIndex >= this.#p.snapshotCount;
    if (dueByCount || this.#bytesSinceSnapshot >= raftLogBytesMax) this.#triggerSnapshot();
  }

  /**
   * Write applied state to the backend at most every backendBatchIntervalMs (etcd's backend batches for
   * 100 ms). The Raft log holds everything not yet flushed, and the consistent index written with each batch
   * says where replay starts, so waiting costs nothing in durability and saves a LevelDB batch per entry.
   */
  #scheduleFlush(): void {
    if (this.#flushTimer !== undefined) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      this.#state.store.flush().catch((error: unknown) => this.#p.onFatal(error));
    }, backendBatchIntervalMs);
  }

  #applyConfChange(e: Entry): void {
    const cc: ConfChange = decodeConfChange(e.data);
    const ctx = decodeConfChangeContext(cc.context);
    const cs = this.#driver.applyConfChange(cc);
    this.#confVoters = cs.voters;
    this.#confLearners = cs.learners;
    // Beside the consistent index: a snapshot sent from this backend states the configuration it holds.
    this.#state.store.buffer.put('meta', confStateKey, pack({ voters: cs.voters, learners: cs.learners }));
    const removedMember = cc.type === 'removeNode' ? this.#state.membership.get(cc.nodeId) : undefined;
    const removedSelf = this.#state.applier.applyConfChange(e.index, cc, ctx.member, this.memberId);
    this.#cluster.confChangeApplied(ctx.id);
    if (cc.type === 'removeNode' && cc.nodeId !== this.memberId && removedMember !== undefined) {
      // Tell the removed member (it may never see the entry that removed it): it stops and says why.
      this.#p.notifyRemoved(removedMember);
    }
    this.#p.syncPeers(this.#state.membership.list());
    // After this batch is applied: Raft does not campaign while a committed conf change is unapplied.
    queueMicrotask(() => this.#campaignIfAlone());
    if (removedSelf) {
      this.#p.logger.warn('this member was removed from the cluster; stopping', { member: hex(this.memberId) });
      // Stop a little later, as etcd does (10 ticks): a leader that removed itself has just broadcast the
      // commit of its removal, and the remaining voters learn it only from those messages.
      setTimeout(() => this.#p.onRemoved(), 10 * this.#p.heartbeatMs).unref();
    }
  }

  /**
   * The only voter need not wait out a randomized election timeout nobody can contest (etcd fast-forwards
   * its election ticks at start in the same way): a single-member cluster serves right after boot.
   */
  #campaignIfAlone(): void {
    if (this.#leader !== 0n) return;
    if (this.#confVoters.length !== 1 || this.#confVoters[0] !== this.memberId) return;
    this.#driver.advanceTicks(2 * electionTicksOf(this.#p.electionMs, this.#p.heartbeatMs));
  }

  async #restoreSnapshot(snapshot: Snapshot): Promise<void> {
    this.#p.logger.info('restoring from snapshot', { index: snapshot.meta.index, term: snapshot.meta.term });
    await this.#state.store.idle();
    const source = snapshot.data.length > 0 ? snapshot.data : await this.#p.snapshotData.source(snapshot.meta);
    assert(source !== undefined, `the data of snapshot ${snapshot.meta.term}/${snapshot.meta.index} is missing`);
    this.#state = await State.restore(this.#p.backend, source, this.#p.stateOptions);
    this.#state.store.setDurableIndex(this.#stableIndex);
    // The received file may go only once the backend that replaced it is durable.
    await this.#state.store.flushDurable();
    await this.#p.snapshotData.removeAll();
    this.#storeView.rebind(this.#state.store);
    this.#auth.rebind(this.#state.auth);
    this.#hub.restore?.();
    this.#confVoters = snapshot.meta.confState.voters;
    this.#confLearners = snapshot.meta.confState.learners;
    this.#snapshotIndex = snapshot.meta.index;
    this.#appliedTerm = snapshot.meta.term;
    this.#appliedWait.advance(snapshot.meta.index);
    this.#p.syncPeers(this.#state.membership.list());
  }

  /**
   * A local snapshot is a marker: the backend already holds the state, so it is made durable up to the
   * applied index (one fsync of LevelDB's log) and the Raft log may then release the entries behind it.
   * Nothing copies the key space.
   */
  #triggerSnapshot(): void {
    if (this.#snapshotting) return;
    this.#snapshotting = true;
    const meta = {
      index: this.#appliedWait.applied,
      term: this.#appliedTerm,
      confState: { voters: [...this.#confVoters], learners: [...this.#confLearners] },
    };
    const keepEntries = catchUpEntries(this.#p.snapshotCount, meta.index - this.#snapshotIndex, this.#bytesSinceSnapshot);
    this.#bytesSinceSnapshot = 0;
    void (async () => {
      try {
        // Applied may run ahead of the local log: the backend holds the snapshot's index once the log does.
        await this.#whenStable(meta.index);
        const durable = await this.#state.store.flushDurable();
        assert(durable >= meta.index, `backend durable to ${durable}, behind the snapshot at ${meta.index}`);
        const snapshot: Snapshot = { meta, data: new Uint8Array(0) };
        await this.#p.saveSnapshot(snapshot);
        this.#driver.compact(snapshot, keepEntries);
        this.#snapshotIndex = meta.index;
        this.#p.releaseLog(Math.max(0, meta.index - keepEntries));
        this.#p.logger.info('snapshot saved', { index: meta.index });
      } catch (error) {
        this.#p.onFatal(error);
      } finally {
        this.#snapshotting = false;
      }
    })();
  }

  /**
   * The snapshot a follower gets (etcd's createMergedSnapshotMessage): the backend as of its consistent
   * index, streamed from a consistent view, with metadata for that index (newer than the Raft core's last
   * snapshot, whose data no longer exists). Call close() when the stream is done with.
   */
  async snapshotForFollower(): Promise<{ meta: SnapshotMeta; chunks: AsyncIterable<Uint8Array>; close(): Promise<void> }> {
    const exported = await this.#state.store.exportSnapshot();
    const packed = exported.meta.get(latin1ConfStateKey);
    const cs: ConfState = packed !== undefined ? unpack<ConfState>(packed) : { voters: [...this.#confVoters], learners: [...this.#confLearners] };
    if (exported.term === 0 || exported.consistentIndex === 0) {
      await exported.view.close();
      throw new Error('the backend has not recorded the term of its consistent index yet');
    }
    return {
      meta: { index: exported.consistentIndex, term: exported.term, confState: { voters: cs.voters, learners: cs.learners } },
      chunks: exported.chunks(),
      close: () => exported.view.close(),
    };
  }

  // ---- EtcdApi: common ----

  header(revision?: number): ResponseHeader {
    return {
      clusterId: this.clusterId,
      memberId: this.memberId,
      revision: revision ?? this.#state.store.revision,
      raftTerm: this.#term,
    };
  }

  hasLeader(): boolean {
    return this.#leader !== 0n;
  }

  /** A learner serves only Status, serializable reads and Snapshot (etcd's rpc not supported for learner). */
  isLearner(): boolean {
    return this.#confLearners.includes(this.memberId);
  }

  #checkAlive(ctx: RequestContext): void {
    if (this.#stopped) throw new EtcdError('stopped');
    if (ctx.requireLeader && !this.hasLeader()) throw new EtcdError('noLeader');
    // ctx.signal is not read here: creating it costs an AbortController per call, and a write that was
    // proposed completes (or times out) whether or not its client is still waiting.
  }

  /**
   * Requests that need a leader wait a bounded time for one (an election takes one to two election
   * timeouts) rather than failing at once: clients such as etcd3 open a circuit breaker on UNAVAILABLE.
   */
  async #awaitLeader(ctx: RequestContext): Promise<void> {
    this.#checkAlive(ctx);
    if (this.hasLeader()) return;
    await new Promise<void>((resolve, reject) => {
      const done = (error?: unknown): void => {
        clearTimeout(timer);
        off();
        ctx.signal.removeEventListener('abort', onAbort);
        if (error === undefined) resolve();
        else reject(error);
      };
      const timer = setTimeout(() => done(new EtcdError('noLeader')), leaderWaitMs(this.#p.electionMs));
      const off = this.onLeaderChange((leader) => {
        if (leader !== 0n) done();
      });
      const onAbort = (): void => done(new EtcdError('canceled'));
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Resolves once a local read reflects every write acknowledged before the call (ReadIndex). */
  async linearizableBarrier(ctx: RequestContext): Promise<void> {
    await this.#awaitLeader(ctx);
    if (this.#p.unsafeTestFaults?.has('skip-read-index') === true) return;
    await this.#reads.read();
  }

  // ---- KV ----

  async range(req: RangeRequest, ctx: RequestContext): Promise<RangeResponse> {
    checkRange(req);
    if (!req.serializable) await this.linearizableBarrier(ctx);
    else this.#checkAlive(ctx);
    const ai = await this.#auth.gate.checkRead(ctx, req.key, req.rangeEnd);
    const r = this.#state.store.range(req);
    this.#auth.gate.afterRead(ai);
    return r;
  }

  async put(req: PutRequest, ctx: RequestContext): Promise<PutResponse> {
    checkPut(req, this.#p.requestLimits?.requestBytesMax);
    await this.#awaitLeader(ctx);
    await this.#checkQuota(req.key.length + req.value.length);
    return (await this.#proposer.propose(await this.#auth.stamp({ kind: 'put', put: req }, ctx))) as PutResponse;
  }

  async deleteRange(req: DeleteRangeRequest, ctx: RequestContext): Promise<DeleteRangeResponse> {
    checkDeleteRange(req, this.#p.requestLimits?.requestBytesMax);
    await this.#awaitLeader(ctx);
    return (await this.#proposer.propose(await this.#auth.stamp({ kind: 'deleteRange', deleteRange: req }, ctx))) as DeleteRangeResponse;
  }

  async txn(req: TxnRequest, ctx: RequestContext): Promise<TxnResponse> {
    checkTxn(req, this.#p.requestLimits?.txnOpsMax, this.#p.requestLimits?.requestBytesMax);
    await this.#awaitLeader(ctx);
    if (isReadOnlyTxn(req)) {
      // etcd serves read-only txns without Raft: a linearizable barrier, then a local evaluation.
      await this.linearizableBarrier(ctx);
      const ai = await this.#auth.gate.checkLocalTxn(ctx, req);
      const r = this.#state.store.txn(req);
      this.#auth.gate.afterRead(ai);
      return r;
    }
    await this.#checkQuota(txnBytes(req));
    return (await this.#proposer.propose(await this.#auth.stamp({ kind: 'txn', txn: req }, ctx))) as TxnResponse;
  }

  async compact(req: CompactionRequest, ctx: RequestContext): Promise<{ revision: number }> {
    await this.#awaitLeader(ctx);
    const result = (await this.#proposer.propose(
      { kind: 'compact', revision: req.revision, physical: req.physical },
    )) as { physicalDone: Promise<void> };
    if (req.physical) await result.physicalDone;
    return { revision: this.#state.store.revision };
  }

  /**
   * etcd's quota check before proposing: over the quota, raise NOSPACE (once) and refuse. First the store
   * may reclaim what compaction deleted (bbolt reuses freed pages at once; LevelDB frees them when it
   * compacts its tables), so rewriting compacted keys never fills the quota.
   */
  async #checkQuota(bytes: number): Promise<void> {
    if (!this.#state.store.overQuota(bytes)) return;
    await this.#state.store.reclaim();
    const state = this.#state;
    if (!state.store.overQuota(bytes)) return;
    if (!state.alarms.list().some((a) => a.alarm === 'NOSPACE' && a.memberId === this.memberId)) {
      this.#p.logger.warn('backend quota exceeded; raising NOSPACE', { dbSizeBytes: state.store.dbSizeBytes() });
      void this.#proposer
        .propose({ kind: 'alarm', action: 'activate', memberId: this.memberId, alarm: 'NOSPACE' })
        .catch(() => {});
    }
    throw new EtcdError('noSpace');
  }

  // ---- Lease ----

  async leaseGrant(req: { ttlSeconds: number; id: bigint }, ctx: RequestContext): Promise<LeaseGrantResult> {
    await this.#awaitLeader(ctx);
    // The proposer picks the id, so apply stays deterministic (etcd: reqIDGen).
    let id = req.id;
    while (id === 0n) {
      const candidate = BigInt.asIntN(64, this.#proposer.nextId() ^ (this.memberId << 40n)) & 0x7fff_ffff_ffff_ffffn;
      if (!this.#state.lessor.exists(candidate)) id = candidate;
    }
    return (await this.#proposer.propose(
      { kind: 'leaseGrant', leaseId: id, ttlSeconds: req.ttlSeconds },
    )) as LeaseGrantResult;
  }

  async leaseRevoke(id: bigint, ctx: RequestContext): Promise<{ revision: number }> {
    await this.#awaitLeader(ctx);
    if (!this.#state.lessor.exists(id)) throw new EtcdError('leaseNotFound');
    await this.#proposer.propose(await this.#auth.stamp({ kind: 'leaseRevoke', leaseId: id }, ctx), ctx.signal);
    return { revision: this.#state.store.revision };
  }

  async leaseKeepAlive(id: bigint, ctx: RequestContext): Promise<number> {
    await this.#awaitLeader(ctx);
    return this.#onLeader(ctx, 'leaseKeepAlive', { id }, () => this.#state.lessor.renew(id, performance.now())) as Promise<number>;
  }

  async leaseTimeToLive(id: bigint, keys: boolean, ctx: RequestContext): Promise<LeaseTimeToLiveResult> {
    await this.#awaitLeader(ctx);
    await this.#auth.gate.checkLeaseRead(ctx, id);
    return this.#onLeader(ctx, 'leaseTimeToLive', { id, keys }, () =>
      this.#state.lessor.timeToLive(id, performance.now(), keys),
    ) as Promise<LeaseTimeToLiveResult>;
  }

  async leaseLeases(ctx: RequestContext): Promise<bigint[]> {
    await this.linearizableBarrier(ctx);
    return this.#state.lessor.leases().map((l: { id: bigint }) => l.id);
  }

  /** Run `local` on the leader: here if this member leads, else forwarded over the peer transport. */
  async #onLeader(ctx: RequestContext, method: string, payload: unknown, local: () => unknown): Promise<unknown> {
    if (this.#isLeader) return local();
    const leader = this.#leader;
    if (leader === 0n) throw new EtcdError('noLeader');
    const member = this.#state.membership.get(leader);
    const url = member?.peerUrls[0];
    if (url === undefined) throw new EtcdError('noLeader');
    void ctx;
    return this.#p.peerRequest(url, method, payload);
  }

  /** Peer requests forwarded to this member (as the leader). */
  async handlePeerRequest(method: string, payload: any): Promise<unknown> {
    switch (method) {
      case 'removed':
        // Only a member that has applied our removal sends this; the handshake proved it knows the token.
        if (payload.id === this.memberId && !this.#stopped) {
          this.#p.logger.warn('this member was removed from the cluster; stopping', { member: hex(this.memberId) });
          setImmediate(() => this.#p.onRemoved());
        }
        return {};
      case 'leaseKeepAlive':
        if (!this.#isLeader) throw new EtcdError('notLeader');
        return this.#state.lessor.renew(payload.id, performance.now());
      case 'hashKV':
        return this.#state.store.hashKV(payload.revision).then((h) => ({ hash: h.hash, compactRevision: h.compactRevision, revision: h.hashRevision }));
      case 'leaseTimeToLive':
        if (!this.#isLeader) throw new EtcdError('notLeader');
        return this.#state.lessor.timeToLive(payload.id, performance.now(), payload.keys);
      default:
        return this.#cluster.handlePeerRequest(method, payload);
    }
  }

  // ---- Watch ----

  openWatchStream(sink: WatchSink, ctx: RequestContext): WatchStream {
    if (this.#p.unsafeTestFaults?.has('drop-watch-event') === true) return this.#auth.guardWatch(this.#hub.openStream(dropOneEvent(sink.send)), sink, ctx);
    return this.#auth.guardWatch(this.#hub.openStream(sink.send), sink, ctx);
  }

  // ---- Cluster ----

  async memberAdd(req: { peerUrls: string[]; isLearner: boolean }, ctx: RequestContext): Promise<MemberAddResult> {
    await this.#awaitLeader(ctx);
    await this.#auth.gate.checkAdmin(ctx);
    return this.#cluster.memberAdd(req);
  }

  async memberRemove(id: bigint, ctx: RequestContext): Promise<Member[]> {
    await this.#awaitLeader(ctx);
    await this.#auth.gate.checkAdmin(ctx);
    return this.#cluster.memberRemove(id);
  }

  async memberUpdate(req: { id: bigint; peerUrls: string[] }, ctx: RequestContext): Promise<Member[]> {
    await this.#awaitLeader(ctx);
    await this.#auth.gate.checkAdmin(ctx);
    return this.#cluster.memberUpdate(req);
  }

  async memberList(linearizable: boolean, ctx: RequestContext): Promise<Member[]> {
    if (linearizable) await this.linearizableBarrier(ctx);
    return this.#state.membership.list();
  }

  async memberPromote(id: bigint, ctx: RequestContext): Promise<Member[]> {
    await this.#awaitLeader(ctx);
    await this.#auth.gate.checkAdmin(ctx);
    return this.#cluster.memberPromote(id);
  }

  // ---- Maintenance ----

  async alarm(req: { action: 'get' | 'activate' | 'deactivate'; memberId: bigint; alarm: AlarmType }, ctx: RequestContext): Promise<AlarmMember[]> {
    this.#checkAlive(ctx);
    const list = (): AlarmMember[] =>
      this.#state.alarms.list().filter(
        (a) => (req.memberId === 0n || a.memberId === req.memberId) && (req.alarm === 'NONE' || a.alarm === req.alarm),
      );
    if (req.action === 'get') return list();
    if (req.action === 'deactivate' && req.memberId === 0n && req.alarm === 'NONE') {
      const all = list();
      for (const a of all) {
        await this.#proposer.propose({ kind: 'alarm', action: 'deactivate', memberId: a.memberId, alarm: a.alarm }, ctx.signal);
      }
      return all;
    }
    const r = await this.#proposer.propose({ kind: 'alarm', action: req.action, memberId: req.memberId, alarm: req.alarm }, ctx.signal);
    return r === undefined ? [] : [r as AlarmMember];
  }

  async status(ctx: RequestContext): Promise<StatusResult> {
    void ctx;
    const s = this.#driver.status();
    const store = this.#state.store;
    const size = store.dbSizeBytes();
    return {
      dbSizeBytes: size,
      dbSizeInUseBytes: size,
      leader: s.leader,
      raftIndex: s.commit,
      raftTerm: s.term,
      raftAppliedIndex: this.#appliedWait.applied,
      isLearner: s.confState.learners.includes(this.memberId),
      errors: this.#state.alarms.list().map((a) => `memberID:${a.memberId} alarm:${a.alarm} `),
    };
  }

  async defragment(ctx: RequestContext): Promise<void> {
    this.#checkAlive(ctx);
    await this.#auth.gate.checkMaintenanceAdmin(ctx);
    await this.#state.store.defragment();
  }

  async hash(ctx: RequestContext): Promise<HashResult> {
    await this.#auth.gate.checkMaintenanceAdmin(ctx);
    const h = await this.#state.store.hash();
    return { hash: h.hash, revision: h.hashRevision };
  }

  async hashKV(revision: number, ctx: RequestContext): Promise<HashKvResult> {
    await this.#auth.gate.checkMaintenanceAdmin(ctx);
    const h = await this.#state.store.hashKV(revision);
    return { hash: h.hash, revision: h.hashRevision, compactRevision: h.compactRevision };
  }

  async snapshot(ctx: RequestContext): Promise<SnapshotSource> {
    this.#checkAlive(ctx);
    await this.#auth.gate.checkMaintenanceAdmin(ctx);
    // etcd's own format (a bbolt file), so etcdctl's snapshot status/restore and etcd itself read it.
    return maintenanceSnapshot(this.#state.store, this.#p.snapshotTempDir ?? tmpdir(), etcdVersion);
  }

  async moveLeader(targetId: bigint, ctx: RequestContext): Promise<void> {
    this.#checkAlive(ctx);
    if (!this.#isLeader) throw new EtcdError('notLeader');
    if (!this.#confVoters.includes(targetId)) {
      if (this.#state.membership.get(targetId) === undefined) throw new EtcdError('memberNotFound');
      throw new EtcdError('badLeaderTransferee');
    }
    await this.transferLeadership(targetId, requestTimeoutMs(this.#p.electionMs));
  }

  /** Ask Raft to hand leadership to `target`; resolves once it leads, or fails after `timeoutMs`. */
  transferLeadership(target: bigint, timeoutMs: number): Promise<void> {
    if (this.#leader === target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new EtcdError('timeout'));
      }, timeoutMs);
      const off = this.onLeaderChange((leader) => {
        if (leader !== target) return;
        clearTimeout(timer);
        off();
        resolve();
      });
      this.#driver.transferLeader(target);
    });
  }

  /** One round of the leader's corruption check; returns the members found corrupt. */
  checkCorruption(): Promise<bigint[]> {
    return checkCorruption({
      isLeader: () => this.#isLeader,
      memberId: this.memberId,
      members: () => this.#state.membership.list(),
      localHash: async (revision) => {
        const h = await this.#state.store.hashKV(revision);
        return { hash: h.hash, compactRevision: h.compactRevision, revision: h.hashRevision };
      },
      currentRevision: () => this.#state.store.revision,
      peerHash: async (m, revision) => {
        const url = m.peerUrls[0];
        if (url === undefined) return undefined;
        return (await this.#p.peerRequest(url, 'hashKV', { revision })) as HashAt;
      },
      raiseCorrupt: async (memberId) =>
        void (await this.#proposer.propose({ kind: 'alarm', action: 'activate', memberId, alarm: 'CORRUPT' })),
      logger: this.#p.logger,
    });
  }

  // ---- Lifecycle ----

  /** Graceful stop: a leader hands leadership to the most caught-up voter first (etcd's TransferLeadership). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    if (this.#isLeader && this.#confVoters.length > 1) {
      const target = this.#bestTransferee();
      if (target !== undefined) {
        try {
          await this.transferLeadership(target, this.#p.electionMs * 2);
          this.#p.logger.info('leadership transferred before stopping', { to: hex(target) });
        } catch {
          this.#p.logger.warn('leadership transfer before stop timed out');
        }
      }
    }
    this.#stopped = true;
    this.#loops.stop();
    this.#compactor?.stop();
    if (this.#corruptTimer !== undefined) clearInterval(this.#corruptTimer);
    if (this.#watchTimer !== undefined) clearInterval(this.#watchTimer);
    this.#driver.stop();
    this.#proposer.failAll(new EtcdError('stopped'));
    this.#reads.failAll(new EtcdError('stopped'));
    this.#hub.close();
    if (this.#flushTimer !== undefined) clearTimeout(this.#flushTimer);
    // Every applied entry was handed to the log before it was applied: once those saves are durable, all of
    // the applied state may be flushed (a failed log keeps the store at what is durable).
    const allDurable = await this.#driver.persisted().then(() => true, () => false);
    if (allDurable) this.#state.store.setDurableIndex(this.#appliedWait.applied);
    await this.#state.store.flush();
    await this.#state.store.idle();
  }

  #bestTransferee(): bigint | undefined {
    const progress = this.#driver.status().progress;
    let best: bigint | undefined;
    let bestMatch = -1;
    for (const id of this.#confVoters) {
      if (id === this.memberId) continue;
      const match = progress?.get(id)?.match ?? 0;
      if (match > bestMatch) {
        best = id;
        bestMatch = match;
      }
    }
    return best;
  }

  // ---- Hosts for the helpers ----

  #clusterHost() {
    return {
      memberId: this.memberId,
      clusterId: () => this.clusterId,
      membership: () => this.#state.membership,
      isLeader: () => this.#isLeader,
      leaderPeerUrl: () => this.#state.membership.get(this.#leader)?.peerUrls[0],
      driver: () => this.#driver,
      confVoters: () => this.#confVoters,
      proposer: this.#proposer,
      peerRequest: this.#p.peerRequest,
      timeoutMs: requestTimeoutMs(this.#p.electionMs),
      logger: this.#p.logger,
    };
  }

  #authHost() {
    return {
      auth: () => this.#state.auth,
      revision: () => this.#state.store.revision,
      leaseKeys: (id: bigint) => this.#state.lessor.keysOf(id),
      applied: () => this.#appliedWait.applied,
      commit: () => this.#commit,
      waitApplied: (index: number) => this.#appliedWait.wait(index),
      timeoutMs: requestTimeoutMs(this.#p.electionMs),
      awaitLeader: (ctx: RequestContext) => this.#awaitLeader(ctx),
      linearizableBarrier: (ctx: RequestContext) => this.linearizableBarrier(ctx),
      propose: (req: RaftRequest, signal?: AbortSignal) => this.#proposer.propose(req, signal),
    };
  }

  #loopsHost() {
    return {
      isLeader: () => this.#isLeader,
      state: () => this.#state,
      proposer: this.#proposer,
      cluster: this.#cluster,
      memberId: this.memberId,
      name: this.#p.name,
      clientUrls: this.#p.clientUrls,
      hub: this.#hub,
      ...(this.#p.watchProgressIntervalMs !== undefined ? { watchProgressIntervalMs: this.#p.watchProgressIntervalMs } : {}),
      logger: this.#p.logger,
      hasLeader: () => this.hasLeader(),
    };
  }
}

export function electionTicksOf(electionMs: number, heartbeatMs: number): number {
  return Math.max(2, Math.round(electionMs / heartbeatMs));
}

/** How long applied state may wait before it is written to the backend. */
export const backendBatchIntervalMs = 20;

/** How long a request waits for a leader before "no leader": a few election timeouts, as a client would retry. */
export function leaderWaitMs(electionMs: number): number {
  return 3 * electionMs;
}

/** Test fault: lose one event of one response on a stream (the watch checker must see the gap). */
function dropOneEvent(send: WatchSink['send']): WatchSink['send'] {
  let withEvents = 0;
  return (r) => {
    if (r.events.length === 0 || ++withEvents !== droppedWatchResponseOrdinal) return send(r);
    return send({ ...r, events: r.events.slice(1) });
  };
}

/** etcd: ReqTimeout = 5 s + 2 × election timeout. */
export function requestTimeoutMs(electionMs: number): number {
  return 5000 + 2 * electionMs;
}

/**
 * Entries kept behind a snapshot (etcd: SnapshotCatchUpEntries = 5,000): at most half the snapshot count,
 * and no more than about catchUpBytesMax of them, judged by the average entry since the last snapshot.
 */
function catchUpEntries(snapshotCount: number, entriesSince: number, bytesSince: number): number {
  const byCount = Math.min(snapshotCatchUpEntries, Math.max(1, Math.floor(snapshotCount / 2)));
  const averageBytes = entriesSince > 0 ? bytesSince / entriesSince : 0;
  const byBytes = averageBytes > 0 ? Math.floor(catchUpBytesMax / averageBytes) : byCount;
  return Math.max(1, Math.min(byCount, byBytes));
}

function isReadOnlyTxn(txn: TxnRequest): boolean {
  const ro = (ops: TxnRequest['success']): boolean =>
    ops.every((op) => 'range' in op || ('txn' in op && isReadOnlyTxn(op.txn)));
  return ro(txn.success) && ro(txn.failure);
}

function txnBytes(txn: TxnRequest): number {
  let n = 0;
  for (const op of [...txn.success, ...txn.failure]) {
    if ('put' in op) n += op.put.key.length + op.put.value.length;
    else if ('txn' in op) n += txnBytes(op.txn);
  }
  return n;
}

export function hex(id: bigint): string {
  return id.toString(16);
}

assert(requestTimeoutMs(1000) === 7000, 'etcd request timeout formula');
