/**
 * Scheduling as a port, beside the Clock: the server's loops (the Raft driver's ticks, the ReadIndex batcher,
 * the leader's periodic work, request deadlines, the backend flush) ask this interface for time and timers,
 * never Node's globals. Production passes the real one (src/node/driver/real-scheduler.ts); the simulator passes
 * one driven by its seeded event queue (SimLoop.scheduler in test/sim/node/sim-loop.ts), so the production node runs there
 * as a pure function of the seed.
 *
 * The method names are not Node's on purpose: the purity scan bans those tokens in src/base.
 */
import type { Clock } from './clock.js';

export interface TimerHandle {
  /** Idempotent; a timer already fired or canceled stays so. */
  cancel(): void;
}

export interface TimerOptions {
  /** Does not keep the process alive by itself (Node's unref); the simulator ignores it. */
  background?: boolean;
}

export interface Scheduler extends Clock {
  /**
   * Wall-clock milliseconds since the epoch. Only for what must differ across restarts (request id bases),
   * never for durations: those use nowMs().
   */
  wallMs(): number;
  /** Run `fn` once, `ms` from now. */
  after(ms: number, fn: () => void, options?: TimerOptions): TimerHandle;
  /** Run `fn` every `ms`, first `ms` from now. */
  every(ms: number, fn: () => void, options?: TimerOptions): TimerHandle;
  /** Run `fn` in a later turn of the loop, after the I/O already due (a macrotask, not a microtask). */
  soon(fn: () => void): void;
}
