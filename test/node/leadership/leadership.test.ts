/**
 * Leadership on its own, built from the four parts it declares (LeadershipParts: time, the election timeout,
 * the leader-change counter, the log) and fakes of the driver, the read batcher and the lessor: the whole
 * 30-field parts bag is not needed to build it (issue 33), so this file would not typecheck if it were.
 */
import { describe, expect, it } from 'vitest';
import { Leadership, type LeadershipHost, type LeadershipParts } from '../../../src/node/leadership/leadership.js';
import { createServerMetrics } from '../../../src/metrics/server-metrics.js';
import { silentLogger } from '../../../src/config/log.js';
import { realScheduler } from '../../../src/node/driver/real-scheduler.js';
import type { SoftState } from '../../../src/raft/types.js';

function setup() {
  let now = 1000;
  const lessor = { promoted: [] as { at: number; extendMs: number }[], demoted: 0 };
  const driver = { softState: { leader: 0n, role: 'follower' } as SoftState, hardState: { term: 1, vote: 0n, commit: 0 } };
  const readAborts: unknown[] = [];
  const parts: LeadershipParts = {
    scheduler: { ...realScheduler, nowMs: () => now },
    electionMs: 1000,
    metrics: createServerMetrics(),
    logger: silentLogger(),
  };
  // Only the fakes are cast; `parts` is checked as it is.
  const host: LeadershipHost = {
    parts,
    reads: { onLeaderChange: (error: unknown) => readAborts.push(error) } as unknown as LeadershipHost['reads'],
    driver: driver as unknown as LeadershipHost['driver'],
    state: () => ({
      lessor: {
        promote: (at: number, o: { extendMs: number }) => lessor.promoted.push({ at, extendMs: o.extendMs }),
        demote: () => lessor.demoted++,
      },
    }) as unknown as ReturnType<LeadershipHost['state']>,
  };
  const leadership = new Leadership(host);
  const become = (s: SoftState): void => {
    const previous = driver.softState;
    driver.softState = s;
    leadership.onSoftState(s, previous);
  };
  return { leadership, parts, driver, lessor, readAborts, become, advance: (ms: number) => (now += ms) };
}

describe('Leadership', () => {
  it('counts and times each new leader, and fails pending reads when a leader is lost or replaced', () => {
    const t = setup();
    const seen: bigint[] = [];
    t.leadership.onLeaderChange((l) => seen.push(l));
    t.become({ leader: 2n, role: 'follower' });
    expect(t.parts.metrics.leaderChanges.get()).toBe(1);
    expect(t.leadership.leaderElectedMs).toBe(1000);
    expect(t.readAborts).toHaveLength(0);
    t.advance(500);
    t.become({ leader: 0n, role: 'follower' });
    expect(t.readAborts).toHaveLength(1);
    expect(t.parts.metrics.leaderChanges.get()).toBe(1);
    expect(seen).toEqual([2n, 0n]);
  });

  it('promotes the lessor only once an entry of its own term is applied, with the election timeout as extension; demotes on stepping down', async () => {
    const t = setup();
    t.driver.hardState.term = 3;
    t.become({ leader: 1n, role: 'leader' });
    const ready = t.leadership.leasesReady();
    t.leadership.onApplied(2);
    expect(t.lessor.promoted).toHaveLength(0);
    t.advance(250);
    t.leadership.onApplied(3);
    await expect(ready).resolves.toBeUndefined();
    expect(t.lessor.promoted).toEqual([{ at: 1250, extendMs: 1000 }]);
    t.become({ leader: 2n, role: 'follower' });
    expect(t.lessor.demoted).toBe(1);
    await expect(t.leadership.leasesReady()).rejects.toThrow(/not leader/);
  });
});
