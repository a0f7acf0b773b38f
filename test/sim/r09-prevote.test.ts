/**
 * R9 — PreVote: a long-partitioned node that rejoins neither bumps terms nor deposes the leader.
 *
 * n3 is cut off for ten election timeouts. Without PreVote it would campaign again and again, raising its
 * term, and on rejoining its higher term would force the leader to step down. With PreVote it only asks
 * whether it could win (it cannot: nobody answers), so its durable term never moves; when it rejoins, n1 stays
 * leader in the same term and n3 catches up.
 */
import { describe, expect, it } from 'vitest';
import { calmCluster, commit, electionTicks, makeLeader } from './story.js';

function isolateAndRejoin(preVote: boolean): { termBefore: number; n3TermWhileCut: number; leaderAfter: bigint | undefined; termAfter: number } {
  const c = calmCluster(3, { raft: { preVote } });
  makeLeader(c, 1);
  commit(c);
  const termBefore = c.node(1).hs.term;
  c.net.isolate(3n, c.ids());
  c.runTicks(10 * electionTicks);
  const n3TermWhileCut = c.node(3).hs.term;
  c.net.healAll();
  const p = commit(c, { maxTicks: 4 * electionTicks });
  c.runUntil(() => c.node(3).sm.ids.has(p), 3 * electionTicks);
  return { termBefore, n3TermWhileCut, leaderAfter: c.leader()?.id, termAfter: c.leader()?.hs.term ?? -1 };
}

describe('R9: PreVote', () => {
  it('an isolated node does not raise its term, and on rejoining the leader keeps its term', () => {
    const r = isolateAndRejoin(true);
    expect(r.n3TermWhileCut).toBe(r.termBefore);
    expect(r.leaderAfter).toBe(1n);
    expect(r.termAfter).toBe(r.termBefore);
  });

  it('without PreVote the same story bumps terms and forces a new election (the contrast)', () => {
    const r = isolateAndRejoin(false);
    expect(r.n3TermWhileCut).toBeGreaterThan(r.termBefore + 3);
    expect(r.termAfter).toBeGreaterThan(r.termBefore);
  });
});
