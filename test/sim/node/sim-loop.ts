/**
 * The event loop of the production-node simulation: one queue of timed callbacks in simulated milliseconds
 * (test/sim/event-queue.ts orders ties by insertion), and one Scheduler per node incarnation over it. After
 * every callback the loop lets the promise chains it started settle (one real macrotask turn: Node runs every
 * microtask first) before the next callback, so the production code's async steps — a WAL save, a backend
 * flush, a proposal's wait — interleave only at points the seed decides. Nothing in the simulated node uses
 * a real timer or real I/O, so a run is a pure function of its seed.
 */
import type { Scheduler, TimerHandle } from '../../../src/base/scheduler.js';
import { EventQueue } from '../event-queue.js';

interface Task {
  owner: SimOwner | undefined;
  fn: () => void;
  canceled: boolean;
}

/** The incarnation that scheduled a task: a crash kills it, and none of its timers fire again. */
export class SimOwner {
  alive = true;
}

/** Lets every promise chain the last callback started run to its end (or to a wait on a simulated timer). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class SimLoop {
  readonly #queue = new EventQueue<Task>();
  #nowMs = 0;
  /** Wall clock at simulated time 0 (for request id bases only). */
  readonly #epochMs: number;
  /** Callbacks run so far (a bound on a run's work). */
  events = 0;
  /**
   * The first exception a callback threw (a production member's assertion, say): in a real process it
   * would be uncaught and stop the member, so the run stops and the seed fails with it.
   */
  thrown: unknown;

  constructor(epochMs = 1_700_000_000_000) {
    this.#epochMs = epochMs;
  }

  get nowMs(): number {
    return this.#nowMs;
  }

  /** Run `fn` at `nowMs + ms` (ms ≥ 0), unless `owner` died by then. */
  at(ms: number, fn: () => void, owner?: SimOwner): TimerHandle {
    const task: Task = { owner, fn, canceled: false };
    this.#queue.push(this.#nowMs + Math.max(0, ms), task);
    return { cancel: () => void (task.canceled = true) };
  }

  /** A promise that resolves `ms` from now (for the simulation's own async actors: clients, disks). */
  sleep(ms: number, owner?: SimOwner): Promise<void> {
    return new Promise((resolve) => this.at(ms, resolve, owner));
  }

  scheduler(owner: SimOwner): Scheduler {
    const loop = this;
    return {
      nowMs: () => loop.#nowMs,
      wallMs: () => loop.#epochMs + loop.#nowMs,
      after: (ms, fn) => loop.at(ms, fn, owner),
      every: (ms, fn) => {
        let current: TimerHandle | undefined;
        let canceled = false;
        const arm = (): void => {
          current = loop.at(ms, () => {
            if (canceled) return;
            arm();
            fn();
          }, owner);
        };
        arm();
        return { cancel: () => { canceled = true; current?.cancel(); } };
      },
      soon: (fn) => void loop.at(0, fn, owner),
    };
  }

  /** Run every callback due up to `untilMs`, settling after each; then the clock stands at `untilMs`. */
  async runUntil(untilMs: number, stop?: () => boolean): Promise<void> {
    for (;;) {
      if (stop?.() === true || this.thrown !== undefined) return;
      const t = this.#queue.peekTime();
      if (t === undefined || t > untilMs) break;
      const e = this.#queue.pop()!;
      this.#nowMs = e.timeStep;
      const task = e.value;
      if (task.canceled || (task.owner !== undefined && !task.owner.alive)) continue;
      this.events++;
      try {
        task.fn();
      } catch (error) {
        this.thrown ??= error;
        return;
      }
      await settle();
    }
    this.#nowMs = Math.max(this.#nowMs, untilMs);
  }
}
