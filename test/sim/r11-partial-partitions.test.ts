/**
 * R11 — partial partitions: a stable leader, and commits continue.
 *
 * Three nodes, n1 leads. Four partial cuts, each held for ten election timeouts while clients keep writing:
 *  - n2 ↮ n3 (the followers cannot talk): irrelevant to Raft;
 *  - n1 ↮ n2 (the leader and one follower cannot talk; both reach n3): n2 hears no leader and wants to
 *    campaign, but its PreVote is refused by n3, which hears the leader (CheckQuorum lease);
 *  - n2 → n1 one-way (n2 hears the leader, its answers are lost): n2 has no reason to campaign;
 *  - n1 → n2 one-way (n2 hears nothing, its messages arrive): PreVote again keeps it from disrupting.
 * In every case n1 stays leader in the same term and writes keep committing on n1 and n3.
 */
import { describe, expect, it } from 'vitest';
import type { Cluster } from './cluster.js';
import { calmCluster, commit, electionTicks, makeLeader } from './story.js';

function holdAndWrite(c: Cluster): void {
  for (let round = 0; round < 10; round++) {
    commit(c, { among: [1, 3] });
    c.runTicks(electionTicks);
  }
}

describe('R11: partial partitions', () => {
  const cuts: [string, (c: Cluster) => void][] = [
    ['followers cut from each other', (c) => c.net.cutBoth(2n, 3n)],
    ['leader and one follower cut, both reaching the third', (c) => c.net.cutBoth(1n, 2n)],
    ['one-way: a follower’s messages to the leader are lost', (c) => c.net.cut(2n, 1n)],
    ['one-way: the leader’s messages to a follower are lost', (c) => c.net.cut(1n, 2n)],
  ];
  for (const [name, cut] of cuts) {
    it(`${name}: the leader stays, in the same term, and commits continue`, () => {
      const c = calmCluster(3);
      makeLeader(c, 1);
      commit(c);
      const term = c.node(1).hs.term;
      cut(c);
      holdAndWrite(c);
      expect(c.leader()?.id).toBe(1n);
      expect(c.node(1).hs.term).toBe(term);
      expect(c.checker.leaderOfTerm(term + 1)).toBeUndefined();
      c.net.healAll();
      const p = commit(c);
      expect(c.node(2).sm.ids.has(p)).toBe(true);
    });
  }
});
