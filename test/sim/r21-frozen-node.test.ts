/**
 * R21 — a frozen node (SIGSTOP; its clock jumps when it resumes) steps down without serving reads.
 *
 * The leader n1 is frozen for three election timeouts. n2 and n3 elect a new leader and commit writes. When n1
 * resumes, it first sees time jump (it ticks the missed ticks at once), which under CheckQuorum makes it step
 * down before it handles the mail that piled up; reads issued on it then are never answered from its stale
 * state (the checker verifies any answer against the writes applied meanwhile).
 */
import { describe, expect, it } from 'vitest';
import { calmCluster, commit, electionTicks, indexOfProposal, makeLeader } from './story.js';

describe('R21: frozen node', () => {
  it('a frozen leader resumes as a follower and serves no stale read', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    c.freeze(1);
    c.runTicks(3 * electionTicks);
    const l = c.leader();
    expect(l).toBeDefined();
    expect(l!.id).not.toBe(1n);
    const writes = [commit(c, { among: [2, 3] }), commit(c, { among: [2, 3] })];
    c.thaw(1);
    expect(c.node(1).role).not.toBe('leader');
    const ctx = c.readIndex(1);
    c.runTicks(2 * electionTicks);
    const a = c.checker.answered.get(ctx);
    if (a !== undefined) expect(a.index).toBeGreaterThanOrEqual(indexOfProposal(c.node(2), writes[1]!)!);
    for (const w of writes) expect(c.node(1).sm.ids.has(w)).toBe(true);
  });

  it('a frozen follower resumes, follows the current leader and does not disrupt it', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    const term = c.node(1).hs.term;
    c.freeze(3);
    c.runTicks(3 * electionTicks);
    commit(c, { among: [1, 2] });
    c.thaw(3);
    c.runTicks(2 * electionTicks);
    expect(c.leader()?.id).toBe(1n);
    expect(c.node(1).hs.term).toBe(term);
  });
});
