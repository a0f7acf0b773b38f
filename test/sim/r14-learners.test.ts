/**
 * R14 — learners never vote or campaign; they receive entries and snapshots; promotion only when caught up;
 * the promotion survives restarts (etcd #18347, #19563, #20793).
 */
import { describe, expect, it } from 'vitest';
import { MessageType } from '../../src/raft/types.js';
import { calmCluster, commit, electionTicks, makeLeader } from './story.js';

function withLearner(options: Parameters<typeof calmCluster>[1] = {}) {
  const c = calmCluster(3, options);
  makeLeader(c, 1);
  commit(c);
  expect(c.proposeConfChange(1, { type: 'addLearner', nodeId: 4n }).ok).toBe(true);
  c.addNode(4);
  return c;
}

describe('R14: learners', () => {
  it('a learner receives and applies every entry but never campaigns or votes, even cut off for long', () => {
    const c = withLearner();
    const seen: string[] = [];
    c.onSend = (m) => {
      if (m.from === 4n && m.type !== MessageType.AppResp && m.type !== MessageType.HeartbeatResp) seen.push(m.type);
    };
    const p = commit(c);
    expect(c.node(4).sm.ids.has(p)).toBe(true);
    expect(c.runUntil(() => c.node(4).sm.appliedIndex === c.node(1).sm.appliedIndex, electionTicks)).toBeDefined();
    expect(c.node(4).sm.hash).toBe(c.node(1).sm.hash);
    const term = c.node(4).hs.term;
    c.net.isolate(4n, c.ids());
    c.runTicks(5 * electionTicks);
    expect(c.node(4).role).toBe('follower');
    expect(c.node(4).hs.term).toBe(term);
    // An election among the voters: the learner is not asked and does not answer.
    c.net.healAll();
    c.transferLeader(1, 2);
    expect(c.runUntil(() => c.leader()?.id === 2n, electionTicks)).toBeDefined();
    c.runTicks(electionTicks);
    expect(seen).toEqual([]);
  });

  it('a learner behind the compacted log gets a snapshot', () => {
    const c = calmCluster(3, { node: { compactEvery: 5, keepEntries: 0 } });
    makeLeader(c, 1);
    for (let i = 0; i < 12; i++) commit(c);
    expect(c.proposeConfChange(1, { type: 'addLearner', nodeId: 4n }).ok).toBe(true);
    c.addNode(4);
    const p = commit(c);
    expect(c.node(4).snapshotsRestored).toBeGreaterThan(0);
    expect(c.node(4).sm.ids.has(p)).toBe(true);
    expect(c.node(4).sm.ids.size).toBe(c.node(1).sm.ids.size);
  });

  it('promotion is refused until the learner has caught up, then accepted', () => {
    const c = withLearner();
    commit(c);
    c.net.cut(1n, 4n);
    for (let i = 0; i < 5; i++) commit(c, { among: [1, 2, 3] });
    expect(c.proposeConfChange(1, { type: 'addVoter', nodeId: 4n })).toEqual({ ok: false, error: 'learnerNotCaughtUp' });
    c.net.healAll();
    expect(c.runUntil(() => c.node(4).sm.appliedIndex === c.node(1).sm.appliedIndex, electionTicks)).toBeDefined();
    c.runTicks(2);
    expect(c.proposeConfChange(1, { type: 'addVoter', nodeId: 4n }).ok).toBe(true);
    expect(c.runUntil(() => c.node(4).confState.voters.includes(4n), electionTicks)).toBeDefined();
  });

  it('a promotion survives restarts of the promoted node and of the leader', () => {
    const c = withLearner();
    commit(c);
    c.runTicks(2);
    expect(c.proposeConfChange(1, { type: 'addVoter', nodeId: 4n }).ok).toBe(true);
    expect(c.runUntil(() => c.node(4).confState.voters.includes(4n), electionTicks)).toBeDefined();
    c.runTicks(2);
    for (const id of [4, 1]) {
      c.crash(id);
      c.runTicks(2);
      c.restart(id);
      expect(c.node(id).raw!.status().confState.voters).toContain(4n);
      expect(c.node(id).raw!.status().confState.learners).not.toContain(4n);
    }
    // n4 now counts: with n2 and n3 down, n1 and n4 are 2 of 4, not a majority; with n3 back, 3 of 4 commit.
    c.crash(2);
    c.crash(3);
    c.runTicks(3 * electionTicks);
    expect(c.leader()).toBeUndefined();
    c.restart(3);
    expect(c.runUntil(() => c.leader() !== undefined, 6 * electionTicks)).toBeDefined();
    commit(c, { among: [1, 3, 4] });
  });
});
