/**
 * The apply side of a member: committed entries into the replicated state, conf changes into the Raft
 * configuration and the member list, the backend flush timer (which waits for the log to be durable), and
 * snapshots (a local marker, a restore from a received one, the stream a follower gets).
 */
import { assert } from '../../base/assert.js';
import { hex } from '../../base/hex.js';
import { backendBacklogBytesMax, raftLogBytesMax, slowApplyMs } from '../../base/limits.js';
import { decodeConfChange } from '../../raft/conf.js';
import { EntryType, type ConfChange, type ConfState, type Entry, type Snapshot, type SnapshotMeta } from '../../raft/types.js';
import type { AppliedWait } from '../request/applied-wait.js';
import type { ClusterOps } from '../membership/cluster-ops.js';
import { pack, unpack } from '../../storage/entry-codec.js';
import type { TimerHandle } from '../../base/scheduler.js';
import { schedulerOf, type EtcdServerParts } from '../etcd-server-parts.js';
import type { Proposer } from '../request/proposer.js';
import type { ProposeResults } from '../request/propose-results.js';
import type { RaftDriver } from '../driver/raft-driver.js';
import { decodeConfChangeContext, decodeRequest } from '../driver/raft-request.js';
import { ServerState } from './server-state.js';
import { catchUpEntries, electionTicksOf } from './catch-up.js';
import { timedExporter } from '../maintenance/timed-snapshot.js';

import { confStateKey, encodeConfStateMeta, latin1ConfStateKey } from './restore-point.js';
import type { AppliedConf } from './applied-conf.js';

/** How long applied state may wait before it is written to the backend. */
export const backendBatchIntervalMs = 20;

/** What the apply loop takes from the server's parts: its storage and the composition root's callbacks. */
export type ApplyParts = Pick<EtcdServerParts,
  | 'scheduler' | 'backend' | 'stateOptions' | 'logger' | 'metrics' | 'heartbeatMs' | 'electionMs' | 'snapshotCount'
  | 'backendBacklogBytesMax' | 'saveSnapshot' | 'snapshotData' | 'releaseLog' | 'syncPeers' | 'onRemoved'
  | 'notifyRemoved' | 'onFatal' | 'versions' | 'diskRoom' | 'beforeBackendReplaced'>;

export interface ApplyHost {
  memberId: bigint;
  parts: ApplyParts;
  appliedWait: AppliedWait;
  proposer: Proposer;
  cluster: ClusterOps;
  /** Written here, read by the rest of the node. */
  conf: AppliedConf;
  readonly driver: RaftDriver;
  state(): ServerState;
  leader(): bigint;
  /** A batch was applied; `appliedTerm` is the term of its last entry (the lessor's promotion waits for it). */
  onApplied(appliedTerm: number): void;
  /** A received snapshot replaced the state. */
  setState(state: ServerState): void;
  /** ...and once it is durable, the views over the old state rebind to it. */
  rebindViews(): void;
}

export class ApplyLoop {
  readonly #h: ApplyHost;
  readonly #p: ApplyParts;
  #appliedTerm = 0;
  #snapshotIndex = 0;
  #snapshotting = false;
  /** Entry bytes applied since the last snapshot: the in-memory Raft log grows by as much. */
  #bytesSinceSnapshot = 0;
  #flushTimer: TimerHandle | undefined;
  /** The log is durable up to here (the store flushes no further); waiters for it, e.g. a snapshot. */
  #stableIndex = 0;
  #stableWaiters: { index: number; resolve: () => void }[] = [];
  /** Set while apply waits for the backend to catch up (applyHold). */
  #draining: Promise<void> | undefined;
  /** Times apply waited for the backend (etcetera_server_apply_holds_total). */
  holds = 0;

  constructor(host: ApplyHost) {
    this.#h = host;
    this.#p = host.parts;
  }

  start(driver: RaftDriver, appliedIndex: number, snapshotIndex: number): void {
    this.onStable(driver.node.stableIndex);
    this.#h.appliedWait.advance(appliedIndex);
    this.#snapshotIndex = snapshotIndex;
    this.#h.conf.set(driver.status().confState);
  }

  stop(): void {
    this.#flushTimer?.cancel();
  }

  /** Entries are applied once committed, maybe before they are durable here: the store's flushes wait. */
  onStable(index: number): void {
    // Applied state the last flush had to leave behind is flushed now (no later apply may come to do it).
    const heldBack = this.#h.appliedWait.applied > this.#stableIndex;
    this.#stableIndex = index;
    this.#h.state().store.setDurableIndex(index);
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

  /**
   * The driver asks before each batch. Past backendBacklogBytesMax of applied state not yet in the backend
   * (a backend slower than the offered load: LevelDB compacting, a cgroup squeezing the page cache), apply
   * waits until half of that is written. Without this the flush queue grew with the offered
   * load until the memory cgroup killed the member (issue 22); with it the apply lag grows instead, and the
   * proposer turns new requests away with etcd's "too many requests" once it passes applyLagEntriesMax.
   */
  applyHold(): Promise<void> | undefined {
    if (this.#draining !== undefined) return this.#draining;
    const max = this.#p.backendBacklogBytesMax ?? backendBacklogBytesMax;
    if (this.#h.state().store.backlogBytes <= max) return undefined;
    this.holds++;
    this.#draining = this.#drainBacklog(max / 2).finally(() => {
      this.#draining = undefined;
    });
    return this.#draining;
  }

  async #drainBacklog(resumeBytes: number): Promise<void> {
    for (;;) {
      const store = this.#h.state().store;
      const before = store.backlogBytes;
      if (before <= resumeBytes) return;
      // Writes what the durable log covers and settles once the backend has it (or at once, with nothing to do).
      await store.flush();
      // What is left lies beyond the durable index: it waits for the log's next fsync.
      if (this.#h.state().store.backlogBytes >= before) await this.#whenStable(this.#stableIndex + 1);
    }
  }

  applyEntries(entries: Entry[]): void {
    const state = this.#h.state();
    let appliedBytes = 0;
    for (const e of entries) {
      // The one place the consistent index is recorded: the applier checks it (apply.ts).
      state.store.setConsistentIndex(e.index, e.term);
      if (e.type === EntryType.Normal) {
        if (e.data.length > 0) {
          const env = decodeRequest(e.data);
          const startMs = schedulerOf(this.#p).nowMs();
          const result = state.applier.applyRequest(e.index, env.req);
          this.#observeApplyTime(env.req.kind, schedulerOf(this.#p).nowMs() - startMs);
          if (env.req.kind === 'compact' && result.ok) this.#observeCompaction(result.value as ProposeResults['compact']);
          if (env.req.kind === 'clusterVersionSet') this.#p.versions?.onClusterVersion(env.req.version);
          this.#h.proposer.applied(env.id, result);
        }
      } else {
        this.#applyConfChange(e);
      }
      this.#appliedTerm = e.term;
      this.#bytesSinceSnapshot += e.data.length;
      appliedBytes += e.data.length;
    }
    // Outside apply's logic (it decides nothing applied): asks main's disk watch for a look (disk-room.ts).
    this.#p.diskRoom?.applied(appliedBytes);
    const last = entries[entries.length - 1]!;
    this.#h.onApplied(this.#appliedTerm);
    this.#h.appliedWait.advance(last.index);
    this.#scheduleFlush();
    const dueByCount = last.index - this.#snapshotIndex >= this.#p.snapshotCount;
    if (dueByCount || this.#bytesSinceSnapshot >= raftLogBytesMax) this.#triggerSnapshot();
  }

  /** etcd's warnOfExpensiveRequest: a slow apply (a slow disk, a huge txn) is counted and logged. */
  #observeApplyTime(kind: string, tookMs: number): void {
    if (tookMs <= slowApplyMs) return;
    this.#p.metrics.slowApplies.inc();
    this.#p.logger.warn('apply request took too long', { took: `${tookMs.toFixed(1)}ms`, 'expected-duration': `${slowApplyMs}ms`, request: kind });
  }

  /**
   * A compaction's backend deletes finish after apply; a follower, and the leader's auto-compactor, have nobody
   * waiting for them, so a failed delete would go unobserved (an unhandled rejection). A backend write that
   * fails is fatal here, as a failed flush is: the member stops, as etcd does. A client waiting with
   * `physical` still gets the error on its own copy of the promise.
   */
  #observeCompaction(result: ProposeResults['compact']): void {
    result.physicalDone.catch((error: unknown) => this.#p.onFatal(error));
  }

  /**
   * Write applied state to the backend at most every backendBatchIntervalMs (etcd's backend batches for
   * 100 ms). The Raft log holds everything not yet flushed, and the consistent index written with each batch
   * says where replay starts, so waiting costs nothing in durability and saves a LevelDB batch per entry.
   */
  #scheduleFlush(): void {
    if (this.#flushTimer !== undefined) return;
    this.#flushTimer = schedulerOf(this.#p).after(backendBatchIntervalMs, () => {
      this.#flushTimer = undefined;
      this.#h.state().store.flush().catch((error: unknown) => this.#p.onFatal(error));
    });
  }

  #applyConfChange(e: Entry): void {
    const state = this.#h.state();
    const cc: ConfChange = decodeConfChange(e.data);
    const ctx = decodeConfChangeContext(cc.context);
    const cs = this.#h.driver.applyConfChange(cc);
    this.#h.conf.set(cs);
    // Beside the consistent index: a snapshot sent from this backend states the configuration it holds.
    state.store.buffer.put('meta', confStateKey, encodeConfStateMeta(cs));
    const removedMember = cc.type === 'removeNode' ? state.membership.get(cc.nodeId) : undefined;
    const removedSelf = state.applier.applyConfChange(e.index, cc, ctx.member, this.#h.memberId);
    this.#h.cluster.confChangeApplied(ctx.id);
    if (cc.type === 'removeNode' && cc.nodeId !== this.#h.memberId && removedMember !== undefined) {
      // Tell the removed member (it may never see the entry that removed it): it stops and says why.
      this.#p.notifyRemoved(removedMember);
    }
    this.#p.syncPeers(state.membership.list());
    // After this batch is applied: Raft does not campaign while a committed conf change is unapplied.
    queueMicrotask(() => this.campaignIfAlone());
    if (removedSelf) {
      this.#p.logger.warn('this member was removed from the cluster; stopping', { member: hex(this.#h.memberId) });
      // Stop a little later, as etcd does (10 ticks): a leader that removed itself has just broadcast the
      // commit of its removal, and the remaining voters learn it only from those messages.
      schedulerOf(this.#p).after(10 * this.#p.heartbeatMs, () => this.#p.onRemoved(), { background: true });
    }
  }

  /**
   * The only voter need not wait out a randomized election timeout nobody can contest (etcd fast-forwards
   * its election ticks at start in the same way): a single-member cluster serves right after boot.
   */
  campaignIfAlone(): void {
    if (this.#h.leader() !== 0n) return;
    if (this.#h.conf.voters.length !== 1 || this.#h.conf.voters[0] !== this.#h.memberId) return;
    this.#h.driver.advanceTicks(2 * electionTicksOf(this.#p.electionMs, this.#p.heartbeatMs));
  }

  async restoreSnapshot(snapshot: Snapshot): Promise<void> {
    this.#p.logger.info('restoring from snapshot', { index: snapshot.meta.index, term: snapshot.meta.term });
    await this.#h.state().store.idle();
    const source = snapshot.data.length > 0 ? snapshot.data : await this.#p.snapshotData.source(snapshot.meta);
    assert(source !== undefined, `the data of snapshot ${snapshot.meta.term}/${snapshot.meta.index} is missing`);
    await this.#p.beforeBackendReplaced?.();
    const state = await ServerState.restore(this.#p.backend, source, this.#p.stateOptions);
    this.#h.setState(state);
    state.store.setDurableIndex(this.#stableIndex);
    // The received file may go only once the backend that replaced it is durable.
    await state.store.flushDurable();
    await this.#p.snapshotData.removeThrough(snapshot.meta.index);
    this.#h.rebindViews();
    this.#h.conf.set(snapshot.meta.confState);
    this.#snapshotIndex = snapshot.meta.index;
    this.#appliedTerm = snapshot.meta.term;
    this.#h.appliedWait.advance(snapshot.meta.index);
    this.#p.syncPeers(state.membership.list());
    // The snapshot carries the cluster version its entries set: this member never applies those entries.
    const clusterVersion = state.membership.clusterVersion;
    if (clusterVersion !== undefined) this.#p.versions?.onClusterVersion(clusterVersion);
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
      index: this.#h.appliedWait.applied,
      term: this.#appliedTerm,
      confState: this.#h.conf.toConfState(),
    };
    const keepEntries = catchUpEntries(this.#p.snapshotCount, meta.index - this.#snapshotIndex, this.#bytesSinceSnapshot);
    this.#bytesSinceSnapshot = 0;
    void (async () => {
      try {
        // Applied may run ahead of the local log: the backend holds the snapshot's index once the log does.
        await this.#whenStable(meta.index);
        const durable = await this.#h.state().store.flushDurable();
        assert(durable >= meta.index, `backend durable to ${durable}, behind the snapshot at ${meta.index}`);
        const snapshot: Snapshot = { meta, data: new Uint8Array(0) };
        // A leader's snapshot at or past this one arrived meanwhile: it supersedes this one (found by the
        // production-node simulator: the log refused the older snapshot and the member stopped).
        if (this.#h.driver.receivedSnapshotIndex >= meta.index) return;
        await this.#p.saveSnapshot(snapshot);
        this.#h.driver.compact(snapshot, keepEntries);
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
    const scheduler = schedulerOf(this.#p);
    const exported = await timedExporter(this.#h.state().store, this.#p.metrics.backendSnapshotSeconds, () => scheduler.nowMs()).exportSnapshot();
    const packed = exported.meta.get(latin1ConfStateKey);
    const cs: ConfState = packed !== undefined ? unpack<ConfState>(packed) : this.#h.conf.toConfState();
    if (exported.term === 0 || exported.consistentIndex === 0) {
      await exported.view.close();
      throw new Error('the backend has not recorded the term of its consistent index yet');
    }
    return {
      meta: { index: exported.consistentIndex, term: exported.term, confState: confStateOf(cs) },
      chunks: exported.chunks(),
      close: () => exported.view.close(),
    };
  }
}

/** The configuration as stored beside the consistent index, with `witnesses` only when there are some. */
function confStateOf(cs: ConfState): ConfState {
  const out: ConfState = { voters: cs.voters, learners: cs.learners };
  if (cs.witnesses !== undefined && cs.witnesses.length > 0) out.witnesses = cs.witnesses;
  return out;
}
