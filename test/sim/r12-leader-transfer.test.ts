/**
 * R12 — leader transfer: to an up-to-date node, a lagging one, itself, a non-member, a learner; a transfer that
 * cannot finish times out; proposals are refused while a transfer is in progress.
 */
import { describe, expect, it } from 'vitest';
import { calmCluster, commit, electionTicks, makeLeader } from './story.js';

describe('R12: leader transfer', () => {
  it('to an up-to-date follower: it leads within an election timeout, in the next term', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    const term = c.node(1).hs.term;
    c.transferLeader(1, 2);
    expect(c.runUntil(() => c.leader()?.id === 2n, electionTicks)).toBeDefined();
    expect(c.node(2).hs.term).toBe(term + 1);
    expect(c.node(1).role).toBe('follower');
    commit(c);
  });

  it('asked on a follower, the request is forwarded to the leader', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    c.transferLeader(3, 3);
    expect(c.runUntil(() => c.leader()?.id === 3n, electionTicks)).toBeDefined();
  });

  it('to a lagging follower: the leader first catches it up, then hands over', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    c.net.cut(1n, 3n);
    const behind = [commit(c, { among: [1, 2] }), commit(c, { among: [1, 2] }), commit(c, { among: [1, 2] })];
    expect(c.node(3).sm.ids.has(behind[0]!)).toBe(false);
    expect(c.node(3).log.lastIndex()).toBeLessThan(c.node(1).log.lastIndex());
    c.net.healAll();
    c.transferLeader(1, 3);
    expect(c.runUntil(() => c.leader()?.id === 3n, 2 * electionTicks)).toBeDefined();
    expect(c.runUntil(() => behind.every((p) => c.node(3).sm.ids.has(p)), electionTicks)).toBeDefined();
  });

  it('to itself, to a non-member or to a learner: nothing changes and proposals still commit', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    expect(c.proposeConfChange(1, { type: 'addLearner', nodeId: 4n }).ok).toBe(true);
    c.addNode(4);
    commit(c);
    const term = c.node(1).hs.term;
    for (const target of [1, 99, 4]) {
      c.transferLeader(1, target);
      c.runTicks(2 * electionTicks);
      expect(c.leader()?.id).toBe(1n);
      expect(c.node(1).hs.term).toBe(term);
      expect(c.node(1).raw!.status().leadTransferee).toBe(0n);
      commit(c);
    }
    expect(c.node(4).role).toBe('follower');
  });

  it('to an unreachable follower: proposals are refused during the transfer, which times out', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    c.net.isolate(3n, c.ids());
    c.transferLeader(1, 3);
    c.runTicks(1);
    expect(c.node(1).raw!.status().leadTransferee).toBe(3n);
    expect(c.propose(1).result).toEqual({ ok: false, error: 'proposalDropped' });
    const aborted = c.runUntil(() => c.node(1).raw!.status().leadTransferee === 0n, 2 * electionTicks);
    expect(aborted).toBeDefined();
    expect(aborted!).toBeLessThanOrEqual(electionTicks + 1);
    expect(c.leader()?.id).toBe(1n);
    commit(c, { among: [1, 2] });
  });
});
