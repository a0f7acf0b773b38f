/**
 * R6/R7 — crash between persist and send, on a disk that loses un-synced writes.
 *
 * Appends and votes are acknowledged only once durable (the checker verifies every ack and grant against the
 * durable state as it leaves); so a write the cluster acknowledged is on a majority's disks, and survives even
 * a power loss of every node at the moment of the acknowledgement. Crash right after voting is in
 * self-test.test.ts (with and without the voteBeforePersist fault).
 */
import { describe, expect, it } from 'vitest';
import { calmCluster, commit, electionTicks, makeLeader, waitForLeader } from './story.js';

const slowishDisk = { syncMinSteps: 3, syncMaxSteps: 9, slowRate: 0, slowMinSteps: 0, slowMaxSteps: 0 };

describe('R6/R7: crash between persist and send', () => {
  for (const voters of [3, 5]) {
    it(`${voters} voters: power loss of every node the moment a write is acknowledged; it survives`, () => {
      const c = calmCluster(voters, { disk: slowishDisk });
      makeLeader(c, 1);
      commit(c);
      let lostWrites = 0;
      for (let round = 0; round < 5; round++) {
        const { proposalId } = c.propose(Number(c.leader()!.id));
        expect(c.runEventsUntil(() => c.acked.has(proposalId), 2 * electionTicks)).toBe(true);
        lostWrites += c.ids().map((id) => c.node(id).disk.pendingCount).reduce((a, b) => a + b, 0);
        for (const id of c.ids()) c.crash(id);
        c.dropInFlight(() => true);
        for (const id of c.ids()) c.restart(id);
        waitForLeader(c, 6 * electionTicks);
        commit(c);
        for (const id of c.ids()) expect(c.node(id).sm.ids.has(proposalId), `round ${round}, n${id}`).toBe(true);
      }
      // The power losses did destroy un-synced writes (the acknowledged one was never among them).
      expect(lostWrites).toBeGreaterThan(0);
    });
  }

  it('a follower crashing after its write is durable but before its ack leaves: the leader re-sends, no loss', () => {
    const c = calmCluster(3, { disk: slowishDisk });
    makeLeader(c, 1);
    commit(c);
    const i = c.node(1).log.lastIndex() + 1;
    const { proposalId } = c.propose(1);
    expect(c.runEventsUntil(() => c.node(2).disk.durable.log.lastIndex() >= i, electionTicks)).toBe(true);
    c.crash(2);
    c.dropInFlight((m) => m.from === 2n);
    c.runTicks(2);
    c.restart(2);
    expect(c.node(2).disk.durable.log.lastIndex()).toBeGreaterThanOrEqual(i);
    expect(c.runUntil(() => [1, 2, 3].every((id) => c.node(id).sm.ids.has(proposalId)), 3 * electionTicks)).toBeDefined();
  });
});
