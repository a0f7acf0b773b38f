/**
 * The wiring of a member: each part of EtcdServer sees the rest through a small host interface of its own
 * (what it may read and call), built here from the one ServerCore the facade owns. Closures, not copies:
 * the state object is replaced when a snapshot is restored, and leadership changes under them.
 */
import { timedHash } from './maintenance/timed-hash.js';
import { randomBytes } from 'node:crypto';
import type { WatchHub } from '../mvcc/watch-hub.js';
import type { AppliedWait } from './request/applied-wait.js';
import type { ApplyHost } from './apply/apply-loop.js';
import type { ServerAuth, ServerAuthHost } from './access/server-auth.js';
import type { ClusterHost, ClusterOps } from './membership/cluster-ops.js';
import type { LeaderForward, LeaderForwardHost } from './leadership/leader-forward.js';
import type { Leadership } from './leadership/leadership.js';
import { schedulerOf, type EtcdServerParts } from './etcd-server-parts.js';
import { tickScheduler } from './driver/tick-wheel.js';
import type { LoopsHost } from './periodic/leader-loops.js';
import type { MaintenanceHost } from './maintenance/maintenance-ops.js';
import type { Proposer } from './request/proposer.js';
import type { RaftDriver } from './driver/raft-driver.js';
import type { RaftRequest } from './driver/raft-request.js';
import type { ReadIndexBatcher } from './request/read-index.js';
import type { RequestHost } from './request/pipeline.js';
import type { RequestBarrier } from './request/leader-wait.js';
import { requestTimeoutMs } from './request/timeouts.js';
import type { ServerState } from './apply/server-state.js';
import type { AppliedConf } from './apply/applied-conf.js';

export interface ServerCore {
  memberId: bigint;
  clusterId(): bigint;
  parts: EtcdServerParts;
  leadership: Leadership;
  appliedWait: AppliedWait;
  proposer: Proposer;
  reads: ReadIndexBatcher;
  hub: WatchHub;
  state(): ServerState;
  readonly driver: RaftDriver;
  stopped(): boolean;
  /** The Raft configuration as last applied (written by ApplyLoop). */
  conf: AppliedConf;
  barrier: RequestBarrier;
}

export function clusterHost(c: ServerCore): ClusterHost {
  return {
    memberId: c.memberId,
    clusterId: () => c.clusterId(),
    membership: () => c.state().membership,
    isLeader: () => c.leadership.isLeader,
    leaderPeerUrl: () => c.state().membership.get(c.leadership.leader)?.peerUrls[0],
    driver: c.driver,
    confVoters: () => c.conf.voters,
    proposer: c.proposer,
    peerRequest: c.parts.peerRequest,
    timeoutMs: requestTimeoutMs(c.parts.electionMs),
    logger: c.parts.logger,
    scheduler: schedulerOf(c.parts),
    randomMemberId: c.parts.randomMemberId ?? (() => randomBytes(8).readBigUInt64BE(0)),
    metrics: c.parts.metrics,
  };
}

export function authHost(c: ServerCore): ServerAuthHost {
  return {
    auth: () => c.state().auth,
    revision: () => c.state().store.revision,
    leaseKeys: (id: bigint) => c.state().lessor.keysOf(id),
    applied: () => c.appliedWait.applied,
    commit: () => c.leadership.commit,
    waitApplied: (index: number) => c.appliedWait.wait(index),
    timeoutMs: requestTimeoutMs(c.parts.electionMs),
    scheduler: schedulerOf(c.parts),
    awaitLeader: (ctx) => c.barrier.awaitLeader(ctx),
    linearizableBarrier: (ctx) => c.barrier.linearizableBarrier(ctx),
    propose: <R extends RaftRequest>(req: R, signal?: AbortSignal) => c.proposer.propose(req, signal),
  };
}

export function loopsHost(c: ServerCore, cluster: ClusterOps): LoopsHost {
  const p = c.parts;
  return {
    isLeader: () => c.leadership.isLeader,
    state: () => c.state(),
    proposer: c.proposer,
    cluster,
    memberId: c.memberId,
    name: p.name,
    clientUrls: p.clientUrls,
    hub: c.hub,
    ...(p.watchProgressIntervalMs !== undefined ? { watchProgressIntervalMs: p.watchProgressIntervalMs } : {}),
    ...(p.versions !== undefined ? { versions: p.versions } : {}),
    logger: p.logger,
    // The loops' timers ride the Raft tick: no wake-ups of their own at rest.
    scheduler: tickScheduler(schedulerOf(p), c.driver.ticks),
    hasLeader: () => c.leadership.hasLeader(),
  };
}

export function applyHost(c: ServerCore, cluster: ClusterOps, restored: Pick<ApplyHost, 'setState' | 'rebindViews'>): ApplyHost {
  return {
    memberId: c.memberId,
    parts: c.parts,
    appliedWait: c.appliedWait,
    proposer: c.proposer,
    cluster,
    conf: c.conf,
    driver: c.driver,
    state: () => c.state(),
    leader: () => c.leadership.leader,
    onApplied: (appliedTerm) => c.leadership.onApplied(appliedTerm),
    setState: restored.setState,
    rebindViews: restored.rebindViews,
  };
}

export function forwardHost(c: ServerCore, cluster: ClusterOps): LeaderForwardHost {
  return {
    memberId: c.memberId,
    isLeader: () => c.leadership.isLeader,
    leader: () => c.leadership.leader,
    stopped: () => c.stopped(),
    state: () => c.state(),
    cluster,
    logger: c.parts.logger,
    scheduler: schedulerOf(c.parts),
    leasesReady: () => c.leadership.leasesReady(),
    peerRequest: c.parts.peerRequest,
    onRemoved: () => c.parts.onRemoved(),
    timedHashKV: (run) => timedHash(c.parts, 'hashKV', run),
  };
}

export function maintenanceHost(c: ServerCore, auth: ServerAuth): MaintenanceHost {
  return {
    memberId: c.memberId,
    parts: c.parts,
    appliedWait: c.appliedWait,
    proposer: c.proposer,
    auth,
    state: () => c.state(),
    driver: c.driver,
    isLeader: () => c.leadership.isLeader,
    leader: () => c.leadership.leader,
    dataVoters: () => c.conf.voters.filter((id) => !c.conf.witnesses.includes(id)),
    checkAlive: (ctx) => c.barrier.checkAlive(ctx),
    onLeaderChange: (listener) => c.leadership.onLeaderChange(listener),
  };
}

export function requestHost(c: ServerCore, parts: { auth: ServerAuth; forward: LeaderForward; cluster: ClusterOps }): RequestHost {
  return {
    memberId: c.memberId,
    parts: c.parts,
    state: () => c.state(),
    proposer: c.proposer,
    reads: c.reads,
    barrier: c.barrier,
    logger: c.parts.logger,
    diskRoom: c.parts.diskRoom,
    electionMs: c.parts.electionMs,
    scheduler: schedulerOf(c.parts),
    leasesReady: () => c.leadership.leasesReady(),
    stopped: () => c.stopped(),
    hasLeader: () => c.leadership.hasLeader(),
    onLeaderChange: (listener) => c.leadership.onLeaderChange(listener),
    ...parts,
  };
}
