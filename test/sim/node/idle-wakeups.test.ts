/**
 * An idle member wakes once per Raft tick (issue 34): its periodic work (watch resync, publish, lease checks,
 * learner promotion, the corruption check) rides the tick (src/node/driver/tick-wheel.ts) instead of arming
 * timers of its own, each of which was a wake-up of the process at rest. Counted on the production member
 * under the simulator: every callback of the simulated loop is one wake-up of a real member.
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../../src/base/prng.js';
import { ServerCluster } from './server-cluster.js';
import { tuningOf } from './run-node-seed.js';

/** Callbacks per member per simulated second of an idle 3-member cluster (100 ms ticks). */
async function idleCallbacksPerMemberSecond(): Promise<number> {
  const tuning = { ...tuningOf(new Prng(1), new Set(), 1), snapshotCount: 10_000 };
  const c = new ServerCluster({ seed: 1, voters: 3, tuning });
  for (const n of c.nodes) c.start(n);
  // The starts are promise chains that settle between callbacks: callbacks of our own give them turns to
  // arm their timers (the loop stops when its queue is empty). All before the measured window.
  for (let ms = 10; ms <= 5_000; ms += 10) c.loop.at(ms, () => {});
  await c.loop.runUntil(5_000);
  expect(c.fatal).toEqual([]);
  expect(c.leader()).toBeDefined();
  const before = c.loop.events;
  const seconds = 10;
  await c.loop.runUntil(c.loop.nowMs + seconds * 1000);
  expect(c.fatal).toEqual([]);
  return (c.loop.events - before) / seconds / c.nodes.length;
}

describe('an idle member', () => {
  it('wakes for its tick and its peers only: no timers of its own beside the tick', async () => {
    // Per member and second: 10 ticks, and the heartbeats and their answers delivered (the leader sends 2 and
    // receives 2 per tick, a follower 1 and 1): 23.3. Before the wheel, timers of their own made it 41.3.
    const perSecond = await idleCallbacksPerMemberSecond();
    expect(perSecond).toBeLessThan(26);
  });
});
