/**
 * etcd's Maintenance service on a member: alarms, status, defragment, hashes, the backup snapshot, leader
 * moves, and the leader's periodic corruption check.
 */
import { timedHash } from './timed-hash.js';
import { etcdVersion } from '../../base/version.js';
import { tmpdir } from 'node:os';
import type { AlarmMember, AlarmType } from '../../mvcc/types.js';
import { maintenanceSnapshot } from './maintenance-snapshot.js';
import { timedExporter } from './timed-snapshot.js';
import type { HashKvResult, HashResult, RequestContext, SnapshotSource, StatusResult } from '../api-types.js';
import type { AppliedWait } from '../request/applied-wait.js';
import type { ServerAuth } from '../access/server-auth.js';
import { checkCorruption } from '../corruption/corruption-check.js';
import { schedulerOf, type EtcdServerParts } from '../etcd-server-parts.js';
import { EtcdError } from '../errors.js';
import type { Proposer } from '../request/proposer.js';
import type { RaftDriver } from '../driver/raft-driver.js';
import type { ServerState } from '../apply/server-state.js';
import { requestTimeoutMs } from '../request/timeouts.js';

/** Re-exported for the modules that import it from here; it lives in base/version.ts (a witness reads it too). */
export { etcdVersion };

/** What maintenance takes from the server's parts: time, metrics, the peer RPC, the snapshot's temp dir. */
export type MaintenanceParts = Pick<EtcdServerParts, 'scheduler' | 'metrics' | 'logger' | 'electionMs' | 'peerRequest' | 'snapshotTempDir'>;

export interface MaintenanceHost {
  memberId: bigint;
  parts: MaintenanceParts;
  appliedWait: AppliedWait;
  proposer: Proposer;
  auth: ServerAuth;
  state(): ServerState;
  readonly driver: RaftDriver;
  isLeader(): boolean;
  leader(): bigint;
  /** The voters that hold data: the ones leadership may move to (a witness holds no data, src/raft/witness.ts). */
  dataVoters(): bigint[];
  checkAlive(ctx: RequestContext): void;
  onLeaderChange(listener: (leader: bigint) => void): () => void;
}

export class MaintenanceOps {
  readonly #h: MaintenanceHost;

  constructor(host: MaintenanceHost) {
    this.#h = host;
  }

  async alarm(req: { action: 'get' | 'activate' | 'deactivate'; memberId: bigint; alarm: AlarmType }, ctx: RequestContext): Promise<AlarmMember[]> {
    this.#h.checkAlive(ctx);
    // Every Alarm action is a Raft request in etcd (even get), and its token is judged before it is proposed.
    await this.#h.auth.gate.info(ctx);
    const list = (): AlarmMember[] =>
      this.#h.state().alarms.list().filter(
        (a) => (req.memberId === 0n || a.memberId === req.memberId) && (req.alarm === 'NONE' || a.alarm === req.alarm),
      );
    if (req.action === 'get') return list();
    if (req.action === 'deactivate' && req.memberId === 0n && req.alarm === 'NONE') {
      const all = list();
      for (const a of all) {
        await this.#h.proposer.propose({ kind: 'alarm', action: 'deactivate', memberId: a.memberId, alarm: a.alarm }, ctx.signal);
      }
      return all;
    }
    const r = await this.#h.proposer.propose({ kind: 'alarm', action: req.action, memberId: req.memberId, alarm: req.alarm }, ctx.signal);
    return r === undefined ? [] : [r];
  }

  status(): StatusResult {
    const s = this.#h.driver.status();
    const state = this.#h.state();
    const size = state.store.dbSizeBytes();
    return {
      dbSizeBytes: size,
      dbSizeInUseBytes: size,
      leader: s.leader,
      raftIndex: s.commit,
      raftTerm: s.term,
      raftAppliedIndex: this.#h.appliedWait.applied,
      isLearner: s.confState.learners.includes(this.#h.memberId),
      errors: state.alarms.list().map((a) => `memberID:${a.memberId} alarm:${a.alarm} `),
    };
  }

  async defragment(ctx: RequestContext): Promise<void> {
    this.#h.checkAlive(ctx);
    await this.#h.auth.gate.checkMaintenanceAdmin(ctx);
    await this.#h.state().store.defragment();
  }

  async hash(ctx: RequestContext): Promise<HashResult> {
    await this.#h.auth.gate.checkMaintenanceAdmin(ctx);
    const h = await timedHash(this.#h.parts, 'hash', () => this.#h.state().store.hash());
    return { hash: h.hash, revision: h.hashRevision };
  }

  async hashKV(revision: number, ctx: RequestContext): Promise<HashKvResult> {
    await this.#h.auth.gate.checkMaintenanceAdmin(ctx);
    const h = await timedHash(this.#h.parts, 'hashKV', () => this.#h.state().store.hashKV(revision));
    return { hash: h.hash, revision: h.hashRevision, compactRevision: h.compactRevision };
  }

  async snapshot(ctx: RequestContext): Promise<SnapshotSource> {
    this.#h.checkAlive(ctx);
    await this.#h.auth.gate.checkMaintenanceAdmin(ctx);
    // etcd's own format (a bbolt file), so etcdctl's snapshot status/restore and etcd itself read it.
    const scheduler = schedulerOf(this.#h.parts);
    const store = timedExporter(this.#h.state().store, this.#h.parts.metrics.backendSnapshotSeconds, () => scheduler.nowMs());
    return maintenanceSnapshot(store, this.#h.parts.snapshotTempDir ?? tmpdir(), etcdVersion);
  }

  async moveLeader(targetId: bigint, ctx: RequestContext): Promise<void> {
    this.#h.checkAlive(ctx);
    if (!this.#h.isLeader()) throw new EtcdError('notLeader');
    if (!this.#h.dataVoters().includes(targetId)) {
      if (this.#h.state().membership.get(targetId) === undefined) throw new EtcdError('memberNotFound');
      throw new EtcdError('badLeaderTransferee');
    }
    await this.transferLeadership(targetId, requestTimeoutMs(this.#h.parts.electionMs));
  }

  /** Ask Raft to hand leadership to `target`; resolves once it leads, or fails after `timeoutMs`. */
  transferLeadership(target: bigint, timeoutMs: number): Promise<void> {
    if (this.#h.leader() === target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = schedulerOf(this.#h.parts).after(timeoutMs, () => {
        off();
        reject(new EtcdError('timeout'));
      });
      const off = this.#h.onLeaderChange((leader) => {
        if (leader !== target) return;
        timer.cancel();
        off();
        resolve();
      });
      this.#h.driver.transferLeader(target);
    });
  }

  /** The data voter whose log matches the leader's furthest: the one to hand leadership to before stopping. */
  bestTransferee(): bigint | undefined {
    const progress = this.#h.driver.status().progress;
    let best: bigint | undefined;
    let bestMatch = -1;
    for (const id of this.#h.dataVoters()) {
      if (id === this.#h.memberId) continue;
      const match = progress?.get(id)?.match ?? 0;
      if (match > bestMatch) {
        best = id;
        bestMatch = match;
      }
    }
    return best;
  }

  /** One round of the leader's corruption check; returns the members found corrupt. */
  checkCorruption(): Promise<bigint[]> {
    return checkCorruption({
      isLeader: () => this.#h.isLeader(),
      memberId: this.#h.memberId,
      members: () => this.#h.state().membership.list(),
      localHash: async (revision) => {
        const h = await timedHash(this.#h.parts, 'hashKV', () => this.#h.state().store.hashKV(revision));
        return { hash: h.hash, compactRevision: h.compactRevision, revision: h.hashRevision };
      },
      currentRevision: () => this.#h.state().store.revision,
      peerHash: async (m, revision) => {
        const url = m.peerUrls[0];
        if (url === undefined) return undefined;
        return this.#h.parts.peerRequest(url, 'hashKV', { revision });
      },
      raiseCorrupt: async (memberId) =>
        void (await this.#h.proposer.propose({ kind: 'alarm', action: 'activate', memberId, alarm: 'CORRUPT' })),
      logger: this.#h.parts.logger,
    });
  }
}
