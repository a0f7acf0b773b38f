/**
 * Time for the WAL's tests: the commit-delay window and simulated sync latency run on a virtual clock that moves
 * only when the test says so, so no test uses a wall-clock sleep as an ordering barrier (issue 33, item 5).
 *
 * The one barrier left is `settle()` (test/settle.ts): the simulated file system does no real I/O, so once ready
 * continuations have run the log has done everything it can do without time passing.
 */
import type { TimerHandle } from '../../src/base/scheduler.js';
import type { WindowTimer } from '../../src/wal/save-queue.js';
import { settle } from '../settle.js';

export { settle };

interface Pending {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
}

export class VirtualTime implements WindowTimer {
  #now = 0;
  #seq = 0;
  #timers: Pending[] = [];

  get now(): number {
    return this.#now;
  }

  after(ms: number, fn: () => void): TimerHandle {
    const t: Pending = { at: this.#now + ms, seq: this.#seq++, fn };
    this.#timers.push(t);
    return { cancel: () => void (this.#timers = this.#timers.filter((x) => x !== t)) };
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.after(ms, resolve));
  }

  /** Lets `ms` of virtual time pass, firing every timer due on the way in order, settling after each. */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    await settle();
    for (let t = this.#next(); t !== undefined && t.at <= end; t = this.#next()) {
      this.#fire(t);
      await settle();
    }
    this.#now = end;
  }

  /** Lets time pass, timer by timer, until `work` settles; throws if it cannot (nothing left to fire). */
  async run<T>(work: Promise<T>): Promise<T> {
    let done = false;
    const watched = work.finally(() => void (done = true));
    watched.catch(() => undefined);
    for (;;) {
      await settle();
      if (done) return watched;
      const t = this.#next();
      if (t === undefined) throw new Error('stalled: the work waits on something that is neither time nor ready');
      this.#fire(t);
    }
  }

  #next(): Pending | undefined {
    let best: Pending | undefined;
    for (const t of this.#timers) if (best === undefined || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    return best;
  }

  #fire(t: Pending): void {
    this.#timers = this.#timers.filter((x) => x !== t);
    this.#now = Math.max(this.#now, t.at);
    t.fn();
  }
}

/** Whether `p` has settled by now (after `settle()`), without waiting for it. */
export async function isDone(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(() => void (done = true), () => void (done = true));
  await settle();
  return done;
}
