/**
 * R10 — CheckQuorum: a leader that lost its quorum steps down within an election timeout.
 *
 * n1 leads three nodes and is then cut off from both followers. It must notice within one election timeout
 * (plus the tick in which the check runs) that it has not heard from a quorum, step down, and stop answering
 * as leader; meanwhile n2 and n3 elect a leader of a higher term. Without CheckQuorum the cut-off leader would
 * go on believing it leads.
 */
import { describe, expect, it } from 'vitest';
import { calmCluster, commit, electionTicks, makeLeader } from './story.js';

describe('R10: CheckQuorum', () => {
  it('a leader cut off from its quorum steps down within an election timeout', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    c.net.isolate(1n, c.ids());
    const took = c.runUntil(() => c.node(1).role !== 'leader', 2 * electionTicks);
    expect(took).toBeDefined();
    expect(took!).toBeLessThanOrEqual(electionTicks + 1);
    const other = c.runUntil(() => c.leader() !== undefined && c.leader()!.id !== 1n, 3 * electionTicks);
    expect(other).toBeDefined();
    expect(c.leader()!.hs.term).toBeGreaterThan(c.node(1).hs.term - 1);
  });

  it('without CheckQuorum the cut-off leader keeps believing it leads (the contrast)', () => {
    const c = calmCluster(3, { raft: { checkQuorum: false } });
    makeLeader(c, 1);
    commit(c);
    c.net.isolate(1n, c.ids());
    c.runTicks(5 * electionTicks);
    expect(c.node(1).role).toBe('leader');
  });
});
