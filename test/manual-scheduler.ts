/**
 * A manual clock with a timer queue, for unit tests of code on the Scheduler port (src/base/scheduler.ts)
 * that arms one-shot timers: time moves only in advance(), and timers due at the same time fire in the order
 * they were set. `armed` counts timers neither fired nor canceled, `arms` every after() so far. every() is not
 * modeled (the simulator's SimLoop is the full one).
 */
import type { Scheduler } from '../src/base/scheduler.js';

export interface ManualScheduler extends Scheduler {
  advance(ms: number): void;
  armed(): number;
  arms(): number;
}

export function manualScheduler(): ManualScheduler {
  let now = 0;
  let seq = 0;
  let arms = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const none = { cancel: () => {} };
  return {
    nowMs: () => now,
    wallMs: () => now,
    after(ms, fn) {
      arms++;
      const id = seq++;
      timers.set(id, { at: now + ms, fn });
      return { cancel: () => void timers.delete(id) };
    },
    every: () => none,
    soon: (fn) => queueMicrotask(fn),
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const due = [...timers.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
        if (due === undefined) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].fn();
      }
      now = until;
    },
    armed: () => timers.size,
    arms: () => arms,
  };
}
