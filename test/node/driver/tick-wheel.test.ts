/** TickWheel: periodic work on the Raft tick, in whole ticks, never sooner than asked (issue 34). */
import { describe, expect, it } from 'vitest';
import type { Scheduler } from '../../../src/base/scheduler.js';
import { TickWheel, tickScheduler } from '../../../src/node/driver/tick-wheel.js';

function runs(wheel: TickWheel, ticks: number, ms: number): number[] {
  const at: number[] = [];
  let tick = 0;
  wheel.every(ms, () => at.push(tick));
  for (tick = 1; tick <= ticks; tick++) wheel.tick();
  return at;
}

describe('TickWheel', () => {
  const cases: [string, number, number[]][] = [
    ['a period of one tick runs on every tick', 100, [1, 2, 3, 4, 5, 6]],
    ['a period of whole ticks runs every that many', 200, [2, 4, 6]],
    ['a period between ticks is rounded up, never sooner than asked', 250, [3, 6]],
    ['a period longer than the ticks run has not run yet', 1000, []],
  ];
  for (const [name, ms, expected] of cases) {
    it(name, () => expect(runs(new TickWheel(100), 6, ms)).toEqual(expected));
  }

  it('refuses a period shorter than a tick', () => {
    expect(() => new TickWheel(100).every(40, () => {})).toThrow(/shorter than the 100 ms tick/);
  });

  it('a canceled task does not run again, also when canceled by a task of the same tick', () => {
    const wheel = new TickWheel(100);
    const seen: string[] = [];
    const b = { cancel: () => {} };
    wheel.every(100, () => {
      seen.push('a');
      b.cancel();
    });
    Object.assign(b, wheel.every(100, () => seen.push('b')));
    wheel.tick();
    wheel.tick();
    expect(seen).toEqual(['a', 'a']);
  });

  it('a task added by a task starts with the next tick', () => {
    const wheel = new TickWheel(100);
    const seen: string[] = [];
    wheel.every(100, () => {
      if (seen.length === 0) wheel.every(100, () => seen.push('added'));
      seen.push('first');
    });
    wheel.tick();
    wheel.tick();
    expect(seen).toEqual(['first', 'first', 'added']);
  });
});

describe('tickScheduler', () => {
  function base(): Scheduler & { armed: number[] } {
    const armed: number[] = [];
    const none = { cancel: () => {} };
    return { armed, nowMs: () => 7, wallMs: () => 8, after: () => none, soon: () => {}, every: (ms) => (armed.push(ms), none) };
  }

  it('puts background periods of a tick or more on the wheel, and keeps the rest on timers', () => {
    const b = base();
    const wheel = new TickWheel(100);
    const s = tickScheduler(b, wheel);
    let ran = 0;
    s.every(100, () => ran++, { background: true });
    s.every(40, () => {}, { background: true });
    s.every(500, () => {});
    wheel.tick();
    expect(b.armed).toEqual([40, 500]);
    expect(ran).toBe(1);
    expect([s.nowMs(), s.wallMs()]).toEqual([7, 8]);
  });
});
