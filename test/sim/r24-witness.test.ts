/**
 * Issue 24 — two data members and a witness (src/raft/witness.ts), in the whole-cluster simulator with every
 * invariant checked after each event (the checker fails if a witness applies, restores state, answers a
 * follower's read, sends a snapshot or appends an entry of its own term as leader).
 *
 * n1 and n2 hold data, n3 is the witness. The hard case: n1 commits entries with n3 while n2 is cut off, then
 * dies. n2 cannot win n3's vote (n3's log is newer); n3 must lead only to hand its log to n2. Also: n3
 * restarted during that hand-off; n2 restored from a backup older than n3's log start; n3 and one data member
 * partitioned from the other.
 */
import { describe, expect, it } from 'vitest';
import { MessageType } from '../../src/raft/types.js';
import { witnessTopology } from './cli-topology.js';
import type { Cluster } from './cluster.js';
import { runSeed } from './run-seed.js';
import { calmCluster, commit, electionTicks, makeLeader } from './story.js';

function twoBoards(options: Parameters<typeof calmCluster>[1] = {}): Cluster {
  const c = calmCluster(3, { witnesses: 1, ...options });
  makeLeader(c, 1);
  commit(c);
  return c;
}

/** n1 commits `count` proposals with the witness while n2 is cut off; returns them. */
function commitWithoutN2(c: Cluster, count: number): number[] {
  c.net.cutBoth(1n, 2n);
  c.net.cutBoth(2n, 3n);
  const ps: number[] = [];
  for (let i = 0; i < count; i++) ps.push(commit(c, { among: [1] }));
  for (const p of ps) expect(c.node(2).sm.ids.has(p)).toBe(false);
  expect(c.node(3).log.lastIndex()).toBeGreaterThan(c.node(2).log.lastIndex());
  return ps;
}

/** Run until n2 leads; returns the ticks it took. */
function n2Leads(c: Cluster, maxTicks: number): number {
  const took = c.runUntil(() => c.dataLeader()?.id === 2n, maxTicks);
  if (took === undefined) throw new Error(`n2 did not lead within ${maxTicks} ticks`);
  return took;
}

function holdsAll(c: Cluster, id: number, proposals: number[]): void {
  for (const p of proposals) expect(c.node(id).sm.ids.has(p), `n${id} lacks proposal ${p}`).toBe(true);
}

describe('issue 24: a witness member', () => {
  it('the hard case: the data leader dies after committing with the witness; the survivor leads with every committed entry', () => {
    const c = twoBoards();
    const committed = commitWithoutN2(c, 5);
    c.crash(1);
    c.net.healAll();
    const took = n2Leads(c, 4 * electionTicks);
    // Measured: 13 ticks (the witness's election timeout, then its election and the hand-off).
    expect(took).toBeLessThanOrEqual(2 * electionTicks);
    expect(c.checker.witnessLeaderships).toBe(1);
    holdsAll(c, 2, committed);
    holdsAll(c, 2, [commit(c, { among: [2] })]);
    expect(c.node(3).sm.appliedIndex).toBe(0);
    expect(c.node(3).appliedIndex).toBe(c.node(2).sm.appliedIndex);
  });

  it('the witness restarted during the hand-off: the survivor still leads with every committed entry', () => {
    // One entry per message, one in flight: the hand-off takes several round trips.
    const c = twoBoards({ raft: { maxMsgBytes: 16, maxInflightMsgs: 1 } });
    const committed = commitWithoutN2(c, 8);
    c.crash(1);
    c.net.healAll();
    const start = c.node(2).log.lastIndex();
    expect(c.runEventsUntil(() => c.leader()?.id === 3n, 4 * electionTicks)).toBe(true);
    // Mid-way: n2 holds some of the witness's tail, not all of it.
    expect(c.runEventsUntil(() => c.node(2).log.lastIndex() >= start + 3, electionTicks)).toBe(true);
    expect(c.node(2).log.lastIndex()).toBeLessThan(c.node(3).log.lastIndex());
    c.crash(3);
    c.dropInFlight((m) => m.from === 3n);
    c.runTicks(2);
    c.restart(3);
    n2Leads(c, 6 * electionTicks);
    expect(c.checker.witnessLeaderships).toBeGreaterThanOrEqual(2);
    holdsAll(c, 2, committed);
    holdsAll(c, 2, [commit(c, { among: [2] })]);
  });

  it('a data member restored from a backup older than the witness log start gets a snapshot from a data leader, never from the witness', () => {
    const c = twoBoards({ node: { compactEvery: 5, keepEntries: 0 } });
    for (let i = 0; i < 6; i++) commit(c);
    const backup = c.node(2).disk.durable.snapshot!;
    const early: number[] = [];
    for (let i = 0; i < 12; i++) early.push(commit(c));
    c.runTicks(2);
    const witnessStart = c.node(3).disk.durable.log.snapIndex;
    expect(witnessStart).toBeGreaterThan(backup.meta.index);
    const sent: string[] = [];
    c.onSend = (m) => {
      if (m.type === MessageType.Snap) sent.push(`${m.from}→${m.to}`);
    };
    // n2 and n1 go down; n2 comes back from the backup while n1 stays down: the witness cannot feed it.
    c.crash(2);
    c.crash(1);
    c.node(2).disk.restoreBackup(backup);
    c.checker.onDataRestored(2n);
    c.restart(2);
    c.runTicks(6 * electionTicks);
    expect(c.dataLeader()).toBeUndefined();
    expect(c.checker.witnessLeaderships).toBeGreaterThan(0);
    expect(sent).toEqual([]);
    // n1 returns: a data leader catches n2 up with a snapshot.
    c.restart(1);
    expect(c.runUntil(() => c.dataLeader()?.id === 1n, 6 * electionTicks)).toBeDefined();
    const after = commit(c, { maxTicks: 6 * electionTicks });
    holdsAll(c, 2, [...early, after]);
    expect(sent).toContain('1→2');
    expect(sent.every((s) => s.startsWith('1→'))).toBe(true);
    // And then n2 survives n1's loss.
    c.crash(1);
    n2Leads(c, 4 * electionTicks);
    holdsAll(c, 2, [commit(c, { among: [2] })]);
  });

  it('the data leader cut off from the witness and the other data member: they go on without it', () => {
    const c = twoBoards();
    const behind = commitWithoutN2(c, 3);
    c.net.healAll();
    c.net.isolate(1n, c.ids());
    n2Leads(c, 4 * electionTicks);
    holdsAll(c, 2, behind);
    const during = commit(c, { among: [2] });
    expect(c.runUntil(() => c.node(1).role !== 'leader', electionTicks)).toBeDefined();
    c.net.healAll();
    holdsAll(c, 1, [commit(c, { among: [1, 2] }), during]);
  });

  it('the data follower cut off from the leader and the witness: the leader goes on with the witness, undisturbed', () => {
    const c = twoBoards();
    const leaderTerm = c.node(1).hs.term;
    c.net.isolate(2n, c.ids());
    const during = [commit(c, { among: [1] }), commit(c, { among: [1] })];
    c.runTicks(5 * electionTicks);
    expect(c.dataLeader()?.id).toBe(1n);
    expect(c.node(1).hs.term).toBe(leaderTerm);
    c.net.healAll();
    holdsAll(c, 2, [...during, commit(c)]);
    expect(c.node(1).hs.term).toBe(leaderTerm);
  });

  it('the witness cut off or down: the two data members go on; a data leader never hands leadership to it', () => {
    const c = twoBoards();
    c.crash(3);
    commit(c, { among: [1, 2] });
    c.transferLeader(1, 3);
    c.restart(3);
    c.transferLeader(1, 3);
    c.runTicks(3 * electionTicks);
    expect(c.dataLeader()?.id).toBe(1n);
    expect(c.checker.witnessLeaderships).toBe(0);
    c.transferLeader(1, 2);
    n2Leads(c, electionTicks);
    commit(c);
  });
});

describe('issue 24: random scenarios with a witness', () => {
  for (const nodes of [3, 5]) {
    it(`${nodes - 1} data voters and a witness: 20 seeds pass (every checker, then liveness and the witness log bound)`, () => {
      const failures: string[] = [];
      for (let seed = 7000 + 100 * nodes; seed < 7020 + 100 * nodes; seed++) {
        const r = runSeed({ seed, nodes, witnesses: 1 });
        if (!r.ok) failures.push(`seed ${seed}: ${r.error}`);
      }
      expect(failures).toEqual([]);
    });
  }
});

describe('issue 24: the checkers catch a broken witness', () => {
  /** Measured over windows of 20 seeds from 1, 1001, 2001 and 3001: caught at the first seed of each. */
  const caughtWithinSeeds = 5;

  for (const start of [1, 1001]) {
    it(`a witness that never drops its log fails the log bound within ${caughtWithinSeeds} seeds from seed ${start}`, () => {
      let error: string | undefined;
      for (let seed = start; seed < start + caughtWithinSeeds && error === undefined; seed++) {
        const r = runSeed({ seed, ...witnessTopology(seed), faults: { witnessNeverReleases: true } });
        if (!r.ok) error = r.error;
      }
      expect(error).toMatch(/witness log unbounded/);
    });
  }

  it('a witness that applies entries is caught at its first apply', () => {
    const c = calmCluster(3, { witnesses: 1, node: { compactEvery: 1_000_000, keepEntries: 0, unsafeWitnessApplies: true } });
    expect(() => makeLeader(c, 1)).toThrow(/witness 3 applied entry 1/);
  });
});
