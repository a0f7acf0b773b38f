/**
 * The member's timed work besides the leader's loops (leader-loops.ts): the watch hub's resync (etcd's
 * syncWatchersLoop), the leader's corruption check (corruption/corruption-check.ts) and the auto-compactor
 * (auto-compactor.ts), and the periodic work the layers above ask for (every()). One place starts and stops them,
 * so the server facade (etcd-server.ts) owns no timer. Their timers ride the Raft tick (driver/tick-wheel.ts):
 * the scheduler given here is the tick scheduler.
 */
import { watchResyncIntervalMs } from '../../base/limits.js';
import type { Scheduler, TimerHandle } from '../../base/scheduler.js';
import { corruptCheckIntervalMs } from '../corruption/corruption-check.js';
import { AutoCompactor, type AutoCompaction, type CompactorHost } from './auto-compactor.js';

export interface PeriodicHost {
  /** The tick scheduler: no wake-ups of their own at rest. */
  scheduler: Scheduler;
  /** Catch up the watchers still behind (WatchHub.sync). */
  syncWatches(): void;
  /** One round of the leader's corruption check (a follower's round does nothing). */
  checkCorruption(): Promise<unknown>;
  /** --auto-compaction-mode and --auto-compaction-retention; absent: no auto-compaction. */
  autoCompaction?: AutoCompaction;
  /** What the auto-compactor reads and proposes. */
  compactor: Omit<CompactorHost, 'scheduler'>;
}

export class PeriodicWork {
  readonly #h: PeriodicHost;
  #corruptTimer: TimerHandle | undefined;
  #compactor: AutoCompactor | undefined;
  #watchTimer: TimerHandle | undefined;

  constructor(host: PeriodicHost) {
    this.#h = host;
  }

  /**
   * Started in this order, as the server did before this room existed: timers of equal period fire in the
   * order they were set, and the simulator's traces depend on it.
   */
  start(): void {
    const h = this.#h;
    this.#corruptTimer = h.scheduler.every(corruptCheckIntervalMs, () => void h.checkCorruption(), { background: true });
    if (h.autoCompaction !== undefined) {
      this.#compactor = new AutoCompactor({ ...h.compactor, scheduler: h.scheduler }, h.autoCompaction);
      this.#compactor.start();
    }
    this.#watchTimer = h.scheduler.every(watchResyncIntervalMs, () => h.syncWatches(), { background: true });
  }

  /**
   * Periodic work of the layers above (the disk watch, the client port's leader check) on the Raft tick: in
   * the tick's event-loop turn, not a wake-up of its own. Runs while the driver does; the caller cancels it.
   */
  every(ms: number, fn: () => void): TimerHandle {
    return this.#h.scheduler.every(ms, fn, { background: true });
  }

  /** Idempotent; the work started by start() runs no more after it. */
  stop(): void {
    this.#compactor?.stop();
    this.#corruptTimer?.cancel();
    this.#watchTimer?.cancel();
  }
}
