/** The leader's cluster version decision (src/node/periodic/cluster-version.ts), over a fake host. */
import { describe, expect, it } from 'vitest';
import type { MemberVersion } from '../../../src/base/version.js';
import { silentLogger } from '../../../src/config/log.js';
import { ClusterVersionMonitor } from '../../../src/node/periodic/cluster-version.js';
import type { Membership } from '../../../src/node/membership/membership.js';
import type { Proposer } from '../../../src/node/request/proposer.js';
import type { RaftRequest } from '../../../src/node/driver/raft-request.js';

function monitor(o: { leader: boolean; current?: string; peers: Array<[bigint, MemberVersion | null]> }): { tick(): void; proposed: RaftRequest[] } {
  const proposed: RaftRequest[] = [];
  const ids = [1n, 2n, 3n];
  const membership = { list: () => ids.map((id) => ({ id })), clusterVersion: o.current } as unknown as Membership;
  const m = new ClusterVersionMonitor({
    isLeader: () => o.leader,
    memberId: 1n,
    membership: () => membership,
    proposer: { propose: (req: RaftRequest) => (proposed.push(req), new Promise(() => {})) } as unknown as Proposer,
    logger: silentLogger(),
    self: { build: '0.2.0', dataFormat: 2 },
    peers: () => new Map(o.peers),
  });
  return { tick: () => m.tick(), proposed };
}

const v2: MemberVersion = { build: '0.2.1', dataFormat: 2 };

describe('the cluster version monitor', () => {
  it('commits the lowest build once every member announced one, once', () => {
    const m = monitor({ leader: true, peers: [[2n, v2], [3n, v2]] });
    m.tick();
    m.tick(); // still proposing: not again
    expect(m.proposed).toEqual([{ kind: 'clusterVersionSet', version: '0.2' }]);
  });

  it('counts a peer that announced nothing as a build before 0.2, and lowers the version to it', () => {
    const m = monitor({ leader: true, current: '0.2', peers: [[2n, v2], [3n, null]] });
    m.tick();
    expect(m.proposed).toEqual([{ kind: 'clusterVersionSet', version: '0.1' }]);
  });

  it('decides nothing while a member has not been met, when it is no leader, or when nothing changed', () => {
    for (const o of [
      { leader: true, peers: [[2n, v2]] as Array<[bigint, MemberVersion | null]> },
      { leader: false, peers: [[2n, v2], [3n, v2]] as Array<[bigint, MemberVersion | null]> },
      { leader: true, current: '0.2', peers: [[2n, v2], [3n, v2]] as Array<[bigint, MemberVersion | null]> },
    ]) {
      const m = monitor(o);
      m.tick();
      expect(m.proposed).toEqual([]);
    }
  });
});
