/**
 * R16 — snapshot install for a follower behind the compacted log, and a crash at each step of it.
 *
 * n3 is cut off while the others commit twenty entries and compact every five (keeping none), so when it
 * rejoins, the entries it needs are gone and the leader must send a snapshot. We let that finish, or crash:
 *  - n3 as soon as it is handed the snapshot (restored in memory, not yet durable: lost);
 *  - n3 right after the snapshot is durable (it restarts from it);
 *  - the leader while its MsgSnap is in flight (the next leader must send its own).
 * Every variant ends with n3 holding exactly the leader's state.
 */
import { describe, expect, it } from 'vitest';
import { MessageType } from '../../src/raft/types.js';
import type { Cluster } from './cluster.js';
import { calmCluster, commit, electionTicks, makeLeader, waitForLeader } from './story.js';

function behindCompactedLog(): { c: Cluster; proposals: number[] } {
  const c = calmCluster(3, { node: { compactEvery: 5, keepEntries: 0 } });
  makeLeader(c, 1);
  commit(c);
  c.net.isolate(3n, c.ids());
  const proposals: number[] = [];
  for (let i = 0; i < 20; i++) proposals.push(commit(c, { among: [1, 2] }));
  expect(c.node(1).disk.durable.log.snapIndex).toBeGreaterThan(c.node(3).log.lastIndex());
  return { c, proposals };
}

function converges(c: Cluster, proposals: number[]): void {
  const l = waitForLeader(c, 6 * electionTicks);
  const p = commit(c, { on: Number(l.id), maxTicks: 6 * electionTicks });
  const n3 = c.node(3);
  expect(c.runUntil(() => n3.sm.ids.has(p) && n3.sm.appliedIndex === l.sm.appliedIndex, 4 * electionTicks)).toBeDefined();
  for (const q of proposals) expect(n3.sm.ids.has(q)).toBe(true);
  expect(n3.sm.hash).toBe(l.sm.hash);
}

describe('R16: snapshot install', () => {
  it('a follower behind the compacted log is sent a snapshot and catches up', () => {
    const { c, proposals } = behindCompactedLog();
    c.net.healAll();
    converges(c, proposals);
    expect(c.node(3).snapshotsRestored).toBeGreaterThan(0);
  });

  it('crash of the follower as soon as it is handed the snapshot (not yet durable)', () => {
    const { c, proposals } = behindCompactedLog();
    c.net.healAll();
    expect(c.runEventsUntil(() => c.node(3).snapshotsRestored > 0, 3 * electionTicks)).toBe(true);
    const handed = c.node(3).sm.appliedIndex;
    expect(c.node(3).disk.durable.log.snapIndex).toBeLessThan(handed);
    c.crash(3);
    c.runTicks(2);
    c.restart(3);
    expect(c.node(3).sm.appliedIndex).toBeLessThan(handed);
    converges(c, proposals);
    expect(c.node(3).snapshotsRestored).toBeGreaterThan(1);
  });

  it('crash of the follower right after the snapshot is durable: it restarts from it', () => {
    const { c, proposals } = behindCompactedLog();
    c.net.healAll();
    expect(c.runEventsUntil(() => c.node(3).disk.durable.snapshot !== undefined, 3 * electionTicks)).toBe(true);
    const snapIndex = c.node(3).disk.durable.snapshot!.meta.index;
    c.crash(3);
    c.runTicks(2);
    c.restart(3);
    expect(c.node(3).sm.appliedIndex).toBe(snapIndex);
    converges(c, proposals);
  });

  it('crash of the leader while its snapshot is in flight: the next leader sends its own', () => {
    const { c, proposals } = behindCompactedLog();
    let snapSent = false;
    c.onSend = (m) => {
      if (m.type === MessageType.Snap) snapSent = true;
    };
    c.net.healAll();
    expect(c.runEventsUntil(() => snapSent, 3 * electionTicks)).toBe(true);
    c.crash(1);
    c.dropInFlight((m) => m.from === 1n);
    c.runTicks(3 * electionTicks);
    c.restart(1);
    converges(c, proposals);
    expect(c.node(3).snapshotsRestored).toBeGreaterThan(0);
  });
});
