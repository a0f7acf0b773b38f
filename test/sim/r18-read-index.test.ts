/**
 * R18 — ReadIndex: answered only after a heartbeat quorum confirms leadership and once the leader has
 * committed in its term; a cut-off old leader never serves a stale read (etcd #20418). The checker verifies
 * every answer against the writes applied before the read was issued; these stories check when answers come.
 */
import { describe, expect, it } from 'vitest';
import { calmCluster, commit, electionTicks, firstIndexOfTerm, indexOfProposal, makeLeader } from './story.js';

describe('R18: ReadIndex', () => {
  it('a read on the leader is answered at an index covering every earlier write', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    const p = commit(c);
    const ctx = c.readIndex(1);
    expect(c.runUntil(() => c.checker.answered.has(ctx), electionTicks)).toBeDefined();
    const a = c.checker.answered.get(ctx)!;
    expect(a.id).toBe(1n);
    expect(a.index).toBeGreaterThanOrEqual(indexOfProposal(c.node(1), p)!);
  });

  it('a read on a follower is forwarded and answered there', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    const ctx = c.readIndex(3);
    expect(c.runUntil(() => c.checker.answered.has(ctx), electionTicks)).toBeDefined();
    expect(c.checker.answered.get(ctx)!.id).toBe(3n);
  });

  it('a new leader answers only once it has committed an entry of its term', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    c.transferLeader(1, 2);
    expect(c.runEventsUntil(() => c.node(2).role === 'leader', electionTicks)).toBe(true);
    const n2 = c.node(2);
    const ctx = c.readIndex(2);
    expect(c.checker.answered.has(ctx)).toBe(false);
    expect(c.runEventsUntil(() => c.checker.answered.has(ctx), electionTicks)).toBe(true);
    expect(n2.log.term(n2.hs.commit)).toBe(n2.hs.term);
    expect(c.checker.answered.get(ctx)!.index).toBeGreaterThanOrEqual(firstIndexOfTerm(n2)!);
  });

  it('no answer without a heartbeat quorum: the followers’ replies are lost', () => {
    const c = calmCluster(3);
    makeLeader(c, 1);
    commit(c);
    c.net.cut(2n, 1n);
    c.net.cut(3n, 1n);
    const ctx = c.readIndex(1);
    c.runTicks(electionTicks - 2);
    expect(c.checker.answered.has(ctx)).toBe(false);
  });

  it('a cut-off old leader that still believes it leads never answers, while the others write on', () => {
    const c = calmCluster(3, { raft: { checkQuorum: false } });
    makeLeader(c, 1);
    commit(c);
    c.net.isolate(1n, c.ids());
    const stale = c.readIndex(1);
    c.runTicks(3 * electionTicks);
    expect(c.node(1).role).toBe('leader');
    const l = c.leader();
    expect(l?.id).not.toBe(1n);
    for (let i = 0; i < 3; i++) commit(c, { among: [2, 3] });
    const stale2 = c.readIndex(1);
    c.runTicks(2 * electionTicks);
    expect(c.checker.answered.has(stale)).toBe(false);
    expect(c.checker.answered.has(stale2)).toBe(false);
    c.net.healAll();
    c.runTicks(2 * electionTicks);
    // Whatever happened to those reads after healing, the checker held every answer to linearizability.
    expect(c.node(1).role).toBe('follower');
  });
});
