/** /health on a learner is false with a reason (issue 32, item 4): it refuses all but serializable reads. */
import { describe, expect, it } from 'vitest';
import { health, learnerHealthReason } from '../../src/main/client-http.js';
import type { EtcdServer } from '../../src/node/etcd-server.js';

function fakeServer(o: { learner: boolean; leader?: boolean }): EtcdServer {
  return {
    hasLeader: () => o.leader ?? true,
    isLearner: () => o.learner,
    state: { alarms: { list: () => [] } },
    linearizableBarrier: () => Promise.resolve(),
  } as unknown as EtcdServer;
}

describe('/health', () => {
  it('a voting member with a leader and no alarm is healthy', async () => {
    expect(await health(fakeServer({ learner: false }))).toEqual({ health: true, reason: '' });
  });

  it('a learner is not, and says why', async () => {
    expect(await health(fakeServer({ learner: true }))).toEqual({ health: false, reason: learnerHealthReason });
    expect(learnerHealthReason).toContain('rpc not supported for learner');
  });

  it('no leader comes first, as in etcd', async () => {
    expect(await health(fakeServer({ learner: true, leader: false }))).toEqual({ health: false, reason: 'RAFT NO LEADER' });
  });
});
