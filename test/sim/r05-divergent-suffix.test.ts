/**
 * R5 — a divergent uncommitted suffix is truncated.
 *
 * n1 leads, then is cut off and keeps accepting proposals it can never commit (its suffix). n2 and n3 elect a
 * new leader, which commits its own entries at the same indexes. When n1 comes back it must drop its suffix and
 * take the new leader's entries; nothing it accepted alone is ever applied, and the checker has verified
 * throughout that no node truncated at or below its commit.
 */
import { describe, expect, it } from 'vitest';
import { calmCluster, commit, electionTicks, makeLeader, waitForLeader } from './story.js';

describe('R5: divergent uncommitted suffix', () => {
  it('an old leader drops the entries it accepted alone and takes the new leader’s', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    const base = c.node(1).log.lastIndex();
    c.net.isolate(1n, c.ids());
    const orphans = [c.propose(1).proposalId, c.propose(1).proposalId, c.propose(1).proposalId];
    c.runTicks(1);
    expect(c.node(1).log.lastIndex()).toBe(base + 3);
    const oldTerm = c.node(1).hs.term;

    c.runTicks(3 * electionTicks);
    const l = waitForLeader(c);
    expect(l.id).not.toBe(1n);
    const fresh = [commit(c, { among: [2, 3] }), commit(c, { among: [2, 3] })];
    expect(c.node(1).log.term(base + 1)).toBe(oldTerm);

    c.net.healAll();
    const took = c.runUntil(() => c.node(1).log.term(base + 1) === l.log.term(base + 1) && fresh.every((p) => c.node(1).sm.ids.has(p)), 3 * electionTicks);
    expect(took).toBeDefined();
    for (const i of [base + 1, base + 2, base + 3]) expect(c.node(1).log.term(i)).toBe(l.log.term(i));
    // Nobody retried the orphans: they are gone, applied nowhere; n1's state is the new leader's.
    for (const p of orphans) for (const n of c.nodes.values()) expect(n.sm.ids.has(p)).toBe(false);
    expect(c.runUntil(() => c.node(1).sm.appliedIndex === l.sm.appliedIndex, electionTicks)).toBeDefined();
    expect(c.node(1).sm.hash).toBe(l.sm.hash);
  });
});
