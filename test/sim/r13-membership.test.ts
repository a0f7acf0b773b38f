/**
 * R13 — membership changes: one pending change at a time; none before the new leader has committed in its own
 * term (Ongaro 2015: otherwise a change could be decided under two configurations); removing the leader; and
 * the quorum always counted in the right configuration.
 */
import { describe, expect, it } from 'vitest';
import { calmCluster, commit, electionTicks, makeLeader, waitForLeader } from './story.js';

describe('R13: membership', () => {
  it('one pending change at a time', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    expect(c.proposeConfChange(1, { type: 'addLearner', nodeId: 4n }).ok).toBe(true);
    c.addNode(4);
    expect(c.proposeConfChange(1, { type: 'addLearner', nodeId: 5n })).toEqual({ ok: false, error: 'confChangePending' });
    expect(c.runUntil(() => c.node(1).confState.learners.includes(4n), electionTicks)).toBeDefined();
    expect(c.proposeConfChange(1, { type: 'addLearner', nodeId: 5n }).ok).toBe(true);
  });

  it('a new leader refuses changes until it has committed an entry of its own term', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    c.transferLeader(1, 2);
    expect(c.runEventsUntil(() => c.node(2).role === 'leader', electionTicks)).toBe(true);
    expect(c.proposeConfChange(2, { type: 'addLearner', nodeId: 4n })).toEqual({ ok: false, error: 'leaderNotCommittedInTerm' });
    const n2 = c.node(2);
    expect(c.runUntil(() => n2.log.term(n2.hs.commit) === n2.hs.term, electionTicks)).toBeDefined();
    expect(c.proposeConfChange(2, { type: 'addLearner', nodeId: 4n }).ok).toBe(true);
  });

  it('conf changes are leader-only', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    expect(c.proposeConfChange(2, { type: 'addLearner', nodeId: 4n })).toEqual({ ok: false, error: 'notLeader' });
  });

  it('removing the leader: it steps down once the change is applied; the rest elect a leader and go on', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    expect(c.proposeConfChange(1, { type: 'removeNode', nodeId: 1n }).ok).toBe(true);
    expect(c.runUntil(() => c.node(1).confState.voters.length === 2, electionTicks)).toBeDefined();
    expect(c.runUntil(() => c.node(1).role !== 'leader', electionTicks)).toBeDefined();
    const l = waitForLeader(c, 4 * electionTicks);
    expect(l.id).not.toBe(1n);
    expect(l.confState.voters).toEqual([2n, 3n]);
    commit(c, { among: [2, 3] });
  });

  it('the quorum comes from the current configuration: 5 → 3 voters, then 2 of 3 commit and 1 of 3 does not', () => {
    const c = calmCluster(5);
    makeLeader(c, 1);
    commit(c);
    for (const victim of [4n, 5n]) {
      expect(c.proposeConfChange(1, { type: 'removeNode', nodeId: victim }).ok).toBe(true);
      expect(c.runUntil(() => !c.node(1).confState.voters.includes(victim), electionTicks)).toBeDefined();
      commit(c, { among: [1, 2, 3] });
    }
    c.runTicks(2 * electionTicks);
    expect(c.node(4).up || c.node(5).up).toBe(false);
    c.crash(3);
    commit(c, { among: [1, 2] });
    c.crash(2);
    const { proposalId } = c.propose(1);
    c.runTicks(3 * electionTicks);
    expect(c.node(1).sm.ids.has(proposalId)).toBe(false);
    c.restart(2);
    waitForLeader(c, 6 * electionTicks);
    commit(c, { among: [1, 2] });
  });
});
