/**
 * R7 with applyUnstable — a committed entry is applied before it is durable locally (etcd applies while its
 * own WAL write is in flight), and the write-behind backend never gets ahead of the durable log.
 *
 * A committed entry is durable on a quorum, so a leader whose own disk stalls may apply it and answer its
 * client; a follower may apply what the leader committed before its own copy is synced. The one local rule:
 * the backend (SimDisk.writeBackend, durable at once: the worst case) is written only up to stableIndex. A
 * crash at any step then restarts from a backend the log can replay past (RawNode asserts committed ≤ last
 * index) and the checker sees every node's state at each index agree.
 */
import { describe, expect, it } from 'vitest';
import type { DiskProfile } from './disk.js';
import type { NodeTuning } from './sim-node.js';
import { calmCluster, commit, electionTicks, indexOfProposal, makeLeader, waitForLeader } from './story.js';

const stepsPerTick = 10;
const fast: DiskProfile = { syncMinSteps: 1, syncMaxSteps: 1, slowRate: 0, slowMinSteps: 0, slowMaxSteps: 0 };
/** A stall of three election timeouts (an SD card's 1.5 s fsync against a 500 ms election timeout). */
const stalled: DiskProfile = { ...fast, syncMinSteps: 3 * electionTicks * stepsPerTick, syncMaxSteps: 3 * electionTicks * stepsPerTick };

function cluster(applyUnstable: boolean, node: Partial<NodeTuning> = {}) {
  const c = calmCluster(3, { raft: { applyUnstable }, node: { compactEvery: 4, keepEntries: 1, ...node }, stepsPerTick });
  makeLeader(c, 1);
  commit(c);
  return c;
}

/** Propose on the leader n1 while `slow`'s disk stalls; returns the proposal and its log index. */
function proposeDuringStall(c: ReturnType<typeof cluster>, slow: number): { proposalId: number; index: number } {
  c.node(slow).disk.profile = { ...stalled };
  const { proposalId, result } = c.propose(1);
  expect(result.ok).toBe(true);
  return { proposalId, index: indexOfProposal(c.node(1), proposalId)! };
}

describe('R7: applying committed entries before they are durable locally', () => {
  it("a leader whose own fsync stalls answers a write its followers made durable; the backend waits for the log", () => {
    const c = cluster(true);
    const { proposalId, index } = proposeDuringStall(c, 1);
    const n1 = c.node(1);
    expect(c.runEventsUntil(() => n1.sm.ids.has(proposalId), electionTicks)).toBe(true);
    expect(n1.sm.appliedIndex).toBeGreaterThanOrEqual(index);
    expect(n1.disk.durable.log.lastIndex()).toBeLessThan(index);
    expect(n1.disk.backend!.index).toBeLessThan(index);
    // Once the stalled sync completes, the backend catches up.
    expect(c.runEventsUntil(() => (n1.disk.backend?.index ?? 0) >= index, 4 * electionTicks)).toBe(true);
    expect(n1.role).toBe('leader');
  });

  it('without applyUnstable the same write waits for the leader’s own fsync', () => {
    const c = cluster(false);
    const { proposalId, index } = proposeDuringStall(c, 1);
    expect(c.runEventsUntil(() => c.node(1).sm.ids.has(proposalId), electionTicks)).toBe(false);
    expect(c.node(1).sm.appliedIndex).toBeLessThan(index);
  });

  it('a follower applies what the leader committed before its own copy is synced', () => {
    const c = cluster(true);
    const { proposalId, index } = proposeDuringStall(c, 3);
    expect(c.runEventsUntil(() => c.node(3).sm.ids.has(proposalId), electionTicks)).toBe(true);
    expect(c.node(3).disk.durable.log.lastIndex()).toBeLessThan(index);
    expect(c.node(3).disk.backend!.index).toBeLessThan(index);
  });

  for (const slow of [1, 3]) {
    it(`power loss of n${slow} at every step of its stall: it restarts from a backend its log covers`, () => {
      let appliedAhead = 0;
      for (let crashAt = 0; crashAt <= 40; crashAt += 2) {
        const c = cluster(true);
        const { proposalId, index } = proposeDuringStall(c, slow);
        c.runSteps(crashAt);
        const n = c.node(slow);
        if (n.sm.appliedIndex >= index && n.disk.durable.log.lastIndex() < index) appliedAhead++;
        c.crash(slow);
        n.disk.profile = { ...fast };
        c.restart(slow);
        expect(n.sm.appliedIndex, `crash at step ${crashAt}`).toBeLessThanOrEqual(n.disk.durable.log.lastIndex());
        waitForLeader(c, 6 * electionTicks);
        commit(c, { maxTicks: 6 * electionTicks });
        expect(c.node(slow).sm.ids.has(proposalId) || !c.acked.has(proposalId), `crash at step ${crashAt}`).toBe(true);
      }
      // The sweep did crash nodes that had applied the entry before their log held it.
      expect(appliedAhead).toBeGreaterThan(0);
    });
  }

  it('self-test: a backend written at the applied index regardless of the log is caught', () => {
    // Caught at once: the bootstrap entries are applied before the first Ready is durable.
    expect(() => cluster(true, { unsafeBackendAheadOfLog: true })).toThrow(/backend written at \d+ .* beyond the durable log/);
  });
});
