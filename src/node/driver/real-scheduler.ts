/** The production Scheduler (src/base/scheduler.ts): Node's timers and monotonic clock. */
import { performance } from 'node:perf_hooks';
import type { Scheduler, TimerHandle, TimerOptions } from '../../base/scheduler.js';

function handle(timer: NodeJS.Timeout, options: TimerOptions | undefined, clear: (t: NodeJS.Timeout) => void): TimerHandle {
  if (options?.background === true) timer.unref();
  return { cancel: () => clear(timer) };
}

export const realScheduler: Scheduler = {
  nowMs: () => performance.now(),
  wallMs: () => Date.now(),
  after: (ms, fn, options) => handle(setTimeout(fn, ms), options, clearTimeout),
  every: (ms, fn, options) => handle(setInterval(fn, ms), options, clearInterval),
  soon: (fn) => void setImmediate(fn),
};
