/**
 * R4 — figure 8 (the story; test/sim/r04-figure-8.test.ts runs it) of the Raft paper: a leader never commits an entry of an earlier term by counting replicas.
 *
 * The story, on five nodes with one entry per append message:
 *  1. n1 leads term T and replicates X at index i to n2 only, then crashes.
 *  2. n5 wins term T+1 with votes of n3 and n4 and appends its no-op at i, which never leaves it; it crashes.
 *  3. n1 restarts and wins term T+2 (with n2's, n3's or n4's votes). It re-sends X to n3: now n1, n2, n3 hold X
 *     (a majority!) but X is of term T. A correct leader must NOT commit i until an entry of term T+2 is on a
 *     majority. We cut n1 off right then and crash n1 and n2.
 *  4. n5 restarts and wins term T+3 with n3's and n4's votes (its last term T+1 beats their T) and overwrites X.
 * Had n1 committed X in step 3, a committed entry would now be gone: the checker's figure-8 rule catches the
 * commit itself, and state-machine safety would catch the loss.
 */
import { expect } from 'vitest';
import type { RaftConfig } from '../../src/raft/types.js';
import type { Cluster } from './cluster.js';
import { calmCluster, commit, electionTicks, makeLeader } from './story.js';

export function figure8(faults?: RaftConfig['unsafeTestFaults']): { c: Cluster; i: number; commitAtAck: number } {
  const c = calmCluster(5, {
    raft: { preVote: false, checkQuorum: false, maxMsgBytes: 1, maxInflightMsgs: 1, ...(faults ? { unsafeTestFaults: faults } : {}) },
  });
  makeLeader(c, 1);
  commit(c);
  const termT = c.node(1).hs.term;
  // 1. X reaches n2 only.
  for (const to of [3, 4, 5]) c.net.cut(1n, BigInt(to));
  const i = c.node(1).log.lastIndex() + 1;
  c.propose(1);
  expect(c.runEventsUntil(() => c.node(2).disk.durable.log.term(i) === termT, electionTicks)).toBe(true);
  c.crash(1);
  c.dropInFlight((m) => m.from === 1n);
  // 2. Only n5's clock runs: it wins term T+1 with n3 and n4; its no-op at i never leaves it.
  c.net.healAll();
  c.net.isolate(2n, c.ids());
  for (const id of [2, 3, 4]) c.pauseTicks(id, true);
  expect(c.runEventsUntil(() => c.node(5).role === 'leader', 4 * electionTicks)).toBe(true);
  expect(c.node(5).hs.term).toBe(termT + 1);
  c.net.isolate(5n, c.ids());
  c.dropInFlight((m) => m.from === 5n);
  expect(c.runEventsUntil(() => c.node(5).disk.durable.log.term(i) === termT + 1, electionTicks)).toBe(true);
  c.crash(5);
  expect(c.node(3).log.term(i)).toBeUndefined();
  // 3. n1 restarts and (only its clock runs) wins term T+2; n4 hears nothing from it.
  c.net.healAll();
  c.net.cut(1n, 4n);
  for (const id of [2, 3, 4]) c.pauseTicks(id, true);
  c.restart(1);
  expect(c.runEventsUntil(() => c.node(1).role === 'leader', 4 * electionTicks)).toBe(true);
  expect(c.node(1).hs.term).toBe(termT + 2);
  // n3 acknowledges X (durable); cut n1 → n3 before the no-op can follow.
  expect(c.runEventsUntil(() => c.node(3).disk.durable.log.term(i) === termT, electionTicks)).toBe(true);
  c.net.cut(1n, 3n);
  c.runSteps(20);
  const commitAtAck = c.node(1).hs.commit;
  // 4. n1 and n2 crash; n5 restarts and wins with n3 and n4.
  c.crash(1);
  c.crash(2);
  c.dropInFlight((m) => m.from === 1n || m.from === 2n);
  c.net.healAll();
  for (const id of [2, 3, 4]) c.pauseTicks(id, false);
  c.restart(5);
  expect(c.runUntil(() => c.leader()?.id === 5n, 6 * electionTicks)).toBeDefined();
  c.runTicks(electionTicks);
  return { c, i, commitAtAck };
}

