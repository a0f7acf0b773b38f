/**
 * Periodic work that rides the Raft tick (issue 34). A member at rest used to arm a timer per loop (watch
 * resync every 100 ms, publish every 200 ms, the lease check every 500 ms, learner promotion every second,
 * the corruption check): each timer of its own is a wake-up of its own, and an idle wake-up of a Node process
 * (epoll return, the timer phase, entering V8, a microtask checkpoint) costs far more than the few checks it
 * runs. The driver already wakes every tick, so the rest runs in that turn: one wake-up per tick for all.
 *
 * Worked example, tickMs 100: every(100) runs on every tick, every(250) on every third (rounded up to whole
 * ticks, so never sooner than asked), every(40) falls back to a timer of its own (a tick is too coarse).
 * Tasks run in registration order after the tick's Ready is handled; a task registered or canceled while a
 * tick runs takes effect from the next tick.
 */
import { assert } from '../../base/assert.js';
import type { Scheduler, TimerHandle, TimerOptions } from '../../base/scheduler.js';

interface Task {
  periodTicks: number;
  /** Ticks left until the next run. */
  dueInTicks: number;
  fn: () => void;
  canceled: boolean;
}

export class TickWheel {
  readonly tickMs: number;
  #tasks: Task[] = [];

  constructor(tickMs: number) {
    assert(Number.isFinite(tickMs) && tickMs > 0, `tick interval must be positive, got ${tickMs}`);
    this.tickMs = tickMs;
  }

  /** Run `fn` every `ms` (whole ticks, rounded up), first after one period. `ms` must be at least a tick. */
  every(ms: number, fn: () => void): TimerHandle {
    assert(ms >= this.tickMs, `a period of ${ms} ms is shorter than the ${this.tickMs} ms tick`);
    const periodTicks = Math.ceil(ms / this.tickMs);
    const task: Task = { periodTicks, dueInTicks: periodTicks, fn, canceled: false };
    this.#tasks = [...this.#tasks, task];
    return {
      cancel: () => {
        if (task.canceled) return;
        task.canceled = true;
        this.#tasks = this.#tasks.filter((t) => t !== task);
      },
    };
  }

  /** Called by the driver once per tick. */
  tick(): void {
    // A snapshot of the list: tasks added or canceled by a task change #tasks, not this loop.
    for (const t of this.#tasks) {
      if (t.canceled || --t.dueInTicks > 0) continue;
      t.dueInTicks = t.periodTicks;
      t.fn();
    }
  }
}

/**
 * `base` with its background periodic timers on the wheel: the scheduler handed to periodic work (the leader
 * loops, watch resync, auto-compaction, the corruption check). Periods shorter than a tick, and foreground
 * timers (which must keep the process alive by themselves), keep timers of their own.
 */
export function tickScheduler(base: Scheduler, wheel: TickWheel): Scheduler {
  return {
    nowMs: () => base.nowMs(),
    wallMs: () => base.wallMs(),
    after: (ms, fn, options) => base.after(ms, fn, options),
    soon: (fn) => base.soon(fn),
    every: (ms: number, fn: () => void, options?: TimerOptions) =>
      options?.background === true && ms >= wheel.tickMs ? wheel.every(ms, fn) : base.every(ms, fn, options),
  };
}
