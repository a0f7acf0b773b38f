/**
 * Membership changes (etcd's Cluster service and k3s-style joins). Conf changes are proposed on the leader;
 * a follower forwards the request to the leader over the peer transport. Each change waits until the leader
 * has applied it, so the answer's member list already contains it.
 */
import type { ConfChange, ConfChangeType } from '../../raft/types.js';
import type { Member, MemberAddResult } from '../api-types.js';
import { EtcdError, fromProposeError } from '../errors.js';
import type { Logger } from '../../config/log.js';
import type { Membership } from './membership.js';
import type { JoinRequest, JoinResponse, PeerCall, PeerMethod, PeerPayload, PeerResults, PeerRpc } from '../peer-rpc.js';
import type { Proposer } from '../request/proposer.js';
import type { RaftDriver } from '../driver/raft-driver.js';
import { encodeConfChangeContext } from '../driver/raft-request.js';
import { WaitRegistry } from '../request/wait.js';
import type { Scheduler } from '../../base/scheduler.js';
import type { ServerMetrics } from '../../metrics/server-metrics.js';
import { compareMajorMinor, parseVersion, unannouncedBuild } from '../../base/version.js';

export interface ClusterHost {
  memberId: bigint;
  membership(): Membership;
  isLeader(): boolean;
  leaderPeerUrl(): string | undefined;
  readonly driver: RaftDriver;
  confVoters(): bigint[];
  proposer: Proposer;
  peerRequest: PeerCall;
  timeoutMs: number;
  logger: Logger;
  clusterId(): bigint;
  scheduler?: Scheduler;
  /** A fresh 64-bit id candidate for MemberAdd. */
  randomMemberId(): bigint;
  /** etcd's promotion counters, counted on the leader that ran MemberPromote (a follower forwards it). */
  metrics?: Pick<ServerMetrics, 'learnerPromoteSuccesses' | 'learnerPromoteFailures'>;
}

export class ClusterOps {
  readonly #h: ClusterHost;
  readonly #applied: WaitRegistry<void>;
  /** The auto-promotion run under way (promoteCaughtUpLearners). */
  #promoting: Promise<void> | undefined;

  constructor(host: ClusterHost) {
    this.#h = host;
    this.#applied = new WaitRegistry<void>(1024, host.scheduler);
  }

  /** Apply path: a conf change proposed with `requestId` was applied here. */
  confChangeApplied(requestId: bigint): void {
    this.#applied.trigger(requestId, undefined);
  }

  async memberAdd(req: { peerUrls: string[]; isLearner: boolean }): Promise<MemberAddResult> {
    checkUrls(req.peerUrls);
    if (!this.#h.isLeader()) return this.#forward('memberAdd', req);
    const membership = this.#h.membership();
    for (const m of membership.list()) {
      if (m.peerUrls.some((u) => req.peerUrls.includes(u))) throw new EtcdError('peerUrlExist');
    }
    const member: Member = { id: newMemberId(membership, () => this.#h.randomMemberId()), name: '', peerUrls: req.peerUrls, clientUrls: [], isLearner: req.isLearner };
    await this.#propose(req.isLearner ? 'addLearner' : 'addVoter', member);
    return { member, members: this.#h.membership().list() };
  }

  async memberRemove(id: bigint): Promise<Member[]> {
    if (!this.#h.isLeader()) return this.#forward('memberRemove', { id });
    const member = this.#h.membership().get(id);
    if (member === undefined) throw new EtcdError('memberNotFound');
    await this.#propose('removeNode', member);
    return this.#h.membership().list();
  }

  /**
   * A joiner whose start failed after it was added removes itself through the Join service: only a learner
   * that never acknowledged an entry, so holding the join token does not let a client remove a member that
   * runs (issue 20, item 3). Any other removal is etcd's MemberRemove, under etcd's auth.
   */
  async leaveUnstarted(id: bigint): Promise<Member[]> {
    if (!this.#h.isLeader()) return this.#forward('leaveUnstarted', { id });
    const member = this.#h.membership().get(id);
    if (member === undefined) throw new EtcdError('memberNotFound');
    const match = this.#h.driver.status().progress?.get(id)?.match ?? 0;
    if (!member.isLearner || match > 0) {
      throw new Error(`member ${id.toString(16)} is not a learner that never started: remove it with \`etcdctl member remove\``);
    }
    await this.#propose('removeNode', member);
    return this.#h.membership().list();
  }

  async memberPromote(id: bigint): Promise<Member[]> {
    if (!this.#h.isLeader()) return this.#forward('memberPromote', { id });
    try {
      const member = this.#h.membership().get(id);
      if (member === undefined) throw new EtcdError('memberNotFound');
      if (!member.isLearner) throw new EtcdError('memberNotLearner');
      await this.#propose('addVoter', member);
    } catch (error) {
      this.#h.metrics?.learnerPromoteFailures.inc(1, { Reason: error instanceof Error ? error.message : String(error) });
      throw error;
    }
    this.#h.metrics?.learnerPromoteSuccesses.inc();
    return this.#h.membership().list();
  }

  async memberUpdate(req: { id: bigint; peerUrls: string[] }): Promise<Member[]> {
    checkUrls(req.peerUrls);
    if (!this.#h.isLeader()) return this.#forward('memberUpdate', req);
    const membership = this.#h.membership();
    if (membership.get(req.id) === undefined) throw new EtcdError('memberNotFound');
    for (const m of membership.list()) {
      if (m.id !== req.id && m.peerUrls.some((u) => req.peerUrls.includes(u))) throw new EtcdError('peerUrlExist');
    }
    await this.#h.proposer.propose({ kind: 'memberUpdate', memberId: req.id, peerUrls: req.peerUrls });
    return this.#h.membership().list();
  }

  /**
   * k3s-style join: a new member, authenticated by the cluster token, asks any member to add it. It is added
   * as a learner (it cannot hurt the quorum while it catches up) under a new id, and promoted by the leader
   * once caught up; a witness (`etcetera witness`) is added as a witness voter at once. A member already holding its peer URL or name is a stale incarnation (a wiped node
   * rejoining, or a join that crashed before it wrote its identity): k3s removes it first, and so do we,
   * unless it is still active (then the joiner retries until it is not, or gives up with this error).
   */
  async join(req: JoinRequest): Promise<JoinResponse> {
    checkUrls(req.peerUrls);
    if (!this.#h.isLeader()) return this.#forward('join', req);
    refuseOlderJoiner(req, this.#h.membership().clusterVersion);
    const stale = this.#h.membership().list().filter((m) => m.peerUrls.some((u) => req.peerUrls.includes(u)) || (req.name !== '' && m.name === req.name));
    const progress = this.#h.driver.status().progress;
    for (const m of stale) {
      const what = `member ${m.id.toString(16)} (${m.name || 'unstarted'}, ${m.peerUrls.join(',')}) has this name or peer URL`;
      if (m.id === this.#h.memberId) throw new Error(`${what} and is the leader answering this join: give the new member its own --name and peer URL`);
      if (progress?.get(m.id)?.recentActive === true) {
        throw new Error(`${what} and is still active: stop it, or remove it with \`etcdctl member remove\`, before joining again`);
      }
    }
    for (const m of stale) {
      await this.memberRemove(m.id);
      this.#h.logger.info('removed a stale member to let it rejoin under a new id', { member: m.id.toString(16), name: m.name });
    }
    const id = newMemberId(this.#h.membership(), () => this.#h.randomMemberId());
    if (req.witness === true) {
      // A witness holds no data, so it has nothing to catch up on: it votes at once. It serves no client.
      const witness: Member = { id, name: req.name, peerUrls: req.peerUrls, clientUrls: [], isLearner: false };
      await this.#propose('addWitness', witness);
      this.#h.logger.info('member joined as witness', { member: id.toString(16), name: req.name });
      return { memberId: id, clusterId: this.#h.clusterId(), members: this.#h.membership().list() };
    }
    const member: Member = { id, name: req.name, peerUrls: req.peerUrls, clientUrls: req.clientUrls, isLearner: true, autoPromote: true };
    await this.#propose('addLearner', member);
    this.#h.logger.info('member joined as learner', { member: member.id.toString(16), name: req.name });
    return { memberId: member.id, clusterId: this.#h.clusterId(), members: this.#h.membership().list() };
  }

  /**
   * Leader loop: promote `--server` joiners that have caught up (k3s does; API-added learners wait for
   * `member promote`). The loop runs every second and a promotion waits up to the request timeout for its
   * entry to apply, while the learner still reads as a learner: a call while a run is under way joins that run,
   * or each overlapping run proposed the same promotion again.
   */
  promoteCaughtUpLearners(): Promise<void> {
    return (this.#promoting ??= this.#promoteCaughtUp().finally(() => {
      this.#promoting = undefined;
    }));
  }

  async #promoteCaughtUp(): Promise<void> {
    if (!this.#h.isLeader()) return;
    const status = this.#h.driver.status();
    for (const m of this.#h.membership().list()) {
      if (!m.isLearner || m.autoPromote !== true) continue;
      const progress = status.progress?.get(m.id);
      if (progress === undefined || progress.match + learnerPromoteLagEntries < status.commit) continue;
      try {
        await this.memberPromote(m.id);
        this.#h.logger.info('learner promoted to voter', { member: m.id.toString(16) });
      } catch (error) {
        if (!(error instanceof EtcdError && error.code === 'learnerNotReady')) {
          this.#h.logger.warn('learner promotion failed', { member: m.id.toString(16), error: String(error) });
        }
      }
    }
  }

  /** Requests forwarded from a follower (or a joining member) to this member. */
  handlePeerRequest(rpc: PeerRpc): Promise<unknown> {
    switch (rpc.method) {
      case 'memberAdd':
        return this.memberAdd(rpc.payload);
      case 'memberRemove':
        return this.memberRemove(rpc.payload.id);
      case 'leaveUnstarted':
        return this.leaveUnstarted(rpc.payload.id);
      case 'memberPromote':
        return this.memberPromote(rpc.payload.id);
      case 'memberUpdate':
        return this.memberUpdate(rpc.payload);
      case 'join':
        return this.join(rpc.payload);
      case 'members':
        return Promise.resolve({ clusterId: this.#h.clusterId(), members: this.#h.membership().list() });
      default:
        return Promise.reject(new Error(`unknown peer request ${rpc.method}`));
    }
  }

  async #propose(type: ConfChangeType, member: Member): Promise<void> {
    const id = this.#h.proposer.nextId();
    const cc: ConfChange = { type, nodeId: member.id, context: encodeConfChangeContext({ id, member }) };
    const applied = this.#applied.register(id, this.#h.timeoutMs, () => new EtcdError('timeout'));
    const r = this.#h.driver.proposeConfChange(cc);
    if (!r.ok) this.#applied.fail(id, fromProposeError(r.error));
    await applied;
  }

  async #forward<M extends PeerMethod>(method: M, payload: PeerPayload<M>): Promise<PeerResults[M]> {
    const url = this.#h.leaderPeerUrl();
    if (url === undefined) throw new EtcdError('noLeader');
    return this.#h.peerRequest(url, method, payload);
  }
}

/** A learner within this many entries of the commit index counts as caught up for auto-promotion. */
export const learnerPromoteLagEntries = 16;

function newMemberId(membership: Membership, randomMemberId: () => bigint): bigint {
  for (;;) {
    const id = randomMemberId();
    if (id !== 0n && membership.get(id) === undefined && !membership.isRemoved(id)) return id;
  }
}

function checkUrls(urls: string[]): void {
  if (urls.length === 0) throw new EtcdError('memberBadUrls');
  for (const u of urls) {
    try {
      const url = new URL(u);
      if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.port === '') throw new Error('bad');
    } catch {
      throw new EtcdError('memberBadUrls');
    }
  }
}


/**
 * A joiner older than the cluster version is refused before any membership change (etcd refuses a member
 * whose version is below the cluster's the same way, at its start): it could not read what the cluster
 * writes at that version, and a member added and then refused would stay as an orphan learner. A build from
 * before versions were announced says nothing and is 0.1.0. Members already in the cluster may still restart
 * on an older build: that is the rolling downgrade (cluster-version.ts lowers the version for them).
 */
function refuseOlderJoiner(req: JoinRequest, clusterVersion: string | undefined): void {
  if (clusterVersion === undefined) return;
  const build = typeof req.build === 'string' && parseVersion(req.build) !== undefined ? req.build : unannouncedBuild;
  if (compareMajorMinor(build, clusterVersion) >= 0) return;
  throw new Error(
    `this cluster runs at version ${clusterVersion}, and the joining member's build (etcetera ${build}) is older: it cannot join. ` +
    `Join with etcetera ${clusterVersion} or newer (the cluster version follows its oldest member, so downgrade the members first to join an older build)`,
  );
}
