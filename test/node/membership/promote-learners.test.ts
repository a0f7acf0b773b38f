/**
 * The leader's auto-promotion of `--server` joiners (ClusterOps.promoteCaughtUpLearners) runs every second,
 * and a promotion waits for its entry to apply while the learner still reads as a learner: runs that overlap
 * a slow promotion must not propose it again (issue 31, item 6).
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/config/log.js';
import { ClusterOps, type ClusterHost } from '../../../src/node/membership/cluster-ops.js';
import type { Member } from '../../../src/node/api-types.js';
import type { ConfChange } from '../../../src/raft/types.js';
import { SimLoop, SimOwner } from '../../sim/node/sim-loop.js';
import { createServerMetrics, type ServerMetrics } from '../../../src/metrics/server-metrics.js';

const leader: Member = { id: 1n, name: 'a', peerUrls: ['http://a:2380'], clientUrls: [], isLearner: false };
const joiner: Member = { id: 2n, name: 'b', peerUrls: ['http://b:2380'], clientUrls: [], isLearner: true, autoPromote: true };

function cluster(o: { refuse?: boolean; metrics?: ServerMetrics } = {}): { ops: ClusterOps; proposed: ConfChange[]; loop: SimLoop } {
  const loop = new SimLoop();
  const proposed: ConfChange[] = [];
  const members = [leader, joiner];
  let nextId = 100n;
  const host = {
    memberId: 1n,
    membership: () => ({ list: () => members, get: (id: bigint) => members.find((m) => m.id === id), isRemoved: () => false }),
    isLeader: () => true,
    leaderPeerUrl: () => leader.peerUrls[0],
    // The joiner has caught up; its promotion is proposed and never applied (a slow log, a busy leader).
    driver: {
      status: () => ({ commit: 50, progress: new Map([[2n, { match: 50, recentActive: true }]]) }),
      proposeConfChange: (cc: ConfChange) => {
        proposed.push(cc);
        return o.refuse === true ? { ok: false, error: 'learnerNotCaughtUp' } : { ok: true };
      },
    },
    confVoters: () => [1n],
    proposer: { nextId: () => nextId++ },
    peerRequest: () => Promise.reject(new Error('no peers here')),
    timeoutMs: 7000,
    logger: silentLogger(),
    clusterId: () => 9n,
    scheduler: loop.scheduler(new SimOwner()),
    randomMemberId: () => 3n,
    metrics: o.metrics,
  } as unknown as ClusterHost;
  return { ops: new ClusterOps(host), proposed, loop };
}

describe('learner auto-promotion', () => {
  it('proposes a slow promotion once however many runs overlap it', async () => {
    const { ops, proposed, loop } = cluster();
    const runs = [ops.promoteCaughtUpLearners()];
    // The leader loop's next runs, one a second, while the first promotion waits for its entry.
    for (let s = 1; s <= 3; s++) {
      await loop.runUntil(s * 1000);
      runs.push(ops.promoteCaughtUpLearners());
    }
    expect(proposed.map((cc) => [cc.type, cc.nodeId])).toEqual([['addVoter', 2n]]);
    // The promotion times out (its entry never applied); the runs end and the next one tries again.
    await loop.runUntil(8000);
    await Promise.all(runs);
    const next = ops.promoteCaughtUpLearners();
    expect(proposed).toHaveLength(2);
    await loop.runUntil(16_000);
    await next;
  });

  it('counts promotions on the leader as etcd does: successes, and failures by their error message', async () => {
    const metrics = createServerMetrics();
    const ok = cluster({ metrics });
    const promoted = ok.ops.memberPromote(2n);
    await ok.loop.runUntil(10);
    ok.ops.confChangeApplied(100n); // the promotion's entry applied
    await promoted;
    const refused = cluster({ metrics, refuse: true });
    await expect(refused.ops.memberPromote(2n)).rejects.toThrow('in sync with leader');
    await expect(refused.ops.memberPromote(7n)).rejects.toThrow('member not found');
    const text = metrics.registry.expose();
    expect(text).toContain('etcd_server_learner_promote_successes 1\n');
    expect(text).toContain('etcd_server_learner_promote_failures{Reason="etcdserver: can only promote a learner member which is in sync with leader"} 1\n');
    expect(text).toContain('etcd_server_learner_promote_failures{Reason="etcdserver: member not found"} 1\n');
  });
});
