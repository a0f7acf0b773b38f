/**
 * The member's timed work (src/node/periodic/periodic-work.ts) over a manual scheduler: what start() sets and in
 * which order (the simulator's traces depend on it), what each timer runs, and that stop() ends all of it.
 */
import { describe, expect, it } from 'vitest';
import { watchResyncIntervalMs } from '../../../src/base/limits.js';
import type { Scheduler, TimerHandle, TimerOptions } from '../../../src/base/scheduler.js';
import { silentLogger } from '../../../src/config/log.js';
import { corruptCheckIntervalMs } from '../../../src/node/corruption/corruption-check.js';
import { revisionCompactionIntervalMs, type AutoCompaction } from '../../../src/node/periodic/auto-compactor.js';
import { PeriodicWork } from '../../../src/node/periodic/periodic-work.js';

interface Timer { periodMs: number; dueMs: number; fn: () => void; background: boolean; canceled: boolean }

/** Time moves only in advance(); timers due at the same time fire in the order they were set. */
function manualScheduler(): Scheduler & { timers: Timer[]; advance(ms: number): void } {
  let now = 0;
  const timers: Timer[] = [];
  const add = (periodMs: number, fn: () => void, options?: TimerOptions): TimerHandle => {
    const t: Timer = { periodMs, dueMs: now + Math.abs(periodMs), fn, background: options?.background === true, canceled: false };
    timers.push(t);
    return { cancel: () => void (t.canceled = true) };
  };
  return {
    timers,
    nowMs: () => now,
    wallMs: () => now,
    after: (ms, fn, options) => add(-ms, fn, options),
    every: (ms, fn, options) => add(ms, fn, options),
    soon: (fn) => void add(0, fn),
    advance(ms: number) {
      const end = now + ms;
      for (;;) {
        const due = timers.filter((t) => !t.canceled && t.dueMs <= end).sort((a, b) => a.dueMs - b.dueMs)[0];
        if (due === undefined) break;
        now = due.dueMs;
        if (due.periodMs > 0) due.dueMs += due.periodMs;
        else due.canceled = true;
        due.fn();
      }
      now = end;
    },
  };
}

function work(o: { autoCompaction?: AutoCompaction; leader?: boolean } = {}) {
  const scheduler = manualScheduler();
  const calls = { syncs: 0, checks: 0, compactions: [] as number[] };
  let revision = 0;
  const periodic = new PeriodicWork({
    scheduler,
    syncWatches: () => void calls.syncs++,
    checkCorruption: async () => void calls.checks++,
    ...(o.autoCompaction !== undefined ? { autoCompaction: o.autoCompaction } : {}),
    compactor: {
      isLeader: () => o.leader ?? true,
      revision: () => revision,
      compactRevision: () => 0,
      compact: async (r) => void calls.compactions.push(r),
      logger: silentLogger(),
    },
  });
  return { periodic, scheduler, calls, setRevision: (r: number) => void (revision = r) };
}

describe('the periodic work', () => {
  it('sets nothing before start(): the server builds it in its constructor and starts it with the driver', () => {
    const { scheduler } = work({ autoCompaction: { mode: 'revision', retention: '10' } });
    expect(scheduler.timers).toEqual([]);
  });

  it('starts the corruption check, the auto-compactor and the watch resync, in that order, all in the background', () => {
    const { periodic, scheduler } = work({ autoCompaction: { mode: 'revision', retention: '10' } });
    periodic.start();
    expect(scheduler.timers.map((t) => t.periodMs)).toEqual([corruptCheckIntervalMs, revisionCompactionIntervalMs, watchResyncIntervalMs]);
    expect(scheduler.timers.every((t) => t.background)).toBe(true);
  });

  it('without --auto-compaction-retention, sets no compactor', () => {
    const { periodic, scheduler } = work();
    periodic.start();
    expect(scheduler.timers.map((t) => t.periodMs)).toEqual([corruptCheckIntervalMs, watchResyncIntervalMs]);
  });

  it('resyncs watchers every watchResyncIntervalMs (etcd: 100 ms) and checks for corruption every corruptCheckIntervalMs', () => {
    expect(watchResyncIntervalMs).toBe(100);
    const { periodic, scheduler, calls } = work();
    periodic.start();
    scheduler.advance(watchResyncIntervalMs * 3);
    expect(calls).toMatchObject({ syncs: 3, checks: 0 });
    scheduler.advance(corruptCheckIntervalMs - watchResyncIntervalMs * 3);
    expect(calls.checks).toBe(1);
    expect(calls.syncs).toBe(corruptCheckIntervalMs / watchResyncIntervalMs);
  });

  it('runs the auto-compactor on its scheduler: revision mode compacts to current minus retention', async () => {
    const { periodic, scheduler, calls, setRevision } = work({ autoCompaction: { mode: 'revision', retention: '10' } });
    periodic.start();
    setRevision(25);
    scheduler.advance(revisionCompactionIntervalMs);
    await Promise.resolve();
    expect(calls.compactions).toEqual([15]);
  });

  it('stop() ends every timer it set, and is idempotent', () => {
    const { periodic, scheduler, calls } = work({ autoCompaction: { mode: 'revision', retention: '10' } });
    periodic.start();
    scheduler.advance(watchResyncIntervalMs);
    periodic.stop();
    periodic.stop();
    expect(scheduler.timers.every((t) => t.canceled)).toBe(true);
    scheduler.advance(corruptCheckIntervalMs * 2);
    expect(calls).toEqual({ syncs: 1, checks: 0, compactions: [] });
  });

  it('every() sets background work on the same (tick) scheduler for the layers above', () => {
    const { periodic, scheduler } = work();
    let runs = 0;
    const handle = periodic.every(1_000, () => void runs++);
    scheduler.advance(3_000);
    handle.cancel();
    scheduler.advance(3_000);
    expect(runs).toBe(3);
    expect(scheduler.timers[0]).toMatchObject({ periodMs: 1_000, background: true });
  });
});
