/**
 * The wait registry (etcd's pkg/wait): a proposer registers a request id before proposing and is woken with
 * the apply result when the entry carrying that id is applied on this member. Bounded: past the cap new
 * requests are refused ("too many requests"), so a stalled Raft cannot grow memory without limit.
 *
 * Deadlines share one timer (issue 34): a timer per request cost a setTimeout and a clearTimeout on every
 * put. One timeout for all proposals, so a new waiter almost always goes at the end of the list; a settled
 * waiter leaves it as soon as it is at the head (answers come back mostly in proposal order), so the list
 * stays about as long as the pending requests. The lapsing timer: src/base/lapsing-deadlines.ts.
 */
import { assert } from '../../base/assert.js';
import { LapsingDeadlines, type Lapsing } from '../../base/lapsing-deadlines.js';
import type { Scheduler } from '../../base/scheduler.js';
import { realScheduler } from '../driver/real-scheduler.js';

interface Waiter<T> extends Lapsing {
  id: bigint;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
  onTimeout: () => unknown;
}

export class WaitRegistry<T> {
  #waiters = new Map<bigint, Waiter<T>>();
  readonly #deadlines: LapsingDeadlines<Waiter<T>>;
  readonly #max: number;
  readonly #scheduler: Scheduler;

  constructor(max: number, scheduler: Scheduler = realScheduler) {
    assert(max > 0, 'wait registry needs room');
    this.#max = max;
    this.#scheduler = scheduler;
    this.#deadlines = new LapsingDeadlines(scheduler, (w) => this.#expire(w));
  }

  get size(): number {
    return this.#waiters.size;
  }

  /** Entries of the deadline list, settled ones not yet dropped included: about `size` (tests watch it). */
  get listed(): number {
    return this.#deadlines.listed;
  }

  get full(): boolean {
    return this.#waiters.size >= this.#max;
  }

  /** Register `id`; the promise settles on trigger, fail, or after `timeoutMs` with `onTimeout()`. */
  register(id: bigint, timeoutMs: number, onTimeout: () => unknown): Promise<T> {
    assert(!this.#waiters.has(id), `request id ${id} registered twice`);
    const deadlineMs = this.#scheduler.nowMs() + timeoutMs;
    let w!: Waiter<T>;
    const promise = new Promise<T>((resolve, reject) => {
      w = { id, deadlineMs, done: false, resolve, reject, onTimeout };
    });
    this.#waiters.set(id, w);
    this.#deadlines.add(w);
    return promise;
  }

  has(id: bigint): boolean {
    return this.#waiters.has(id);
  }

  trigger(id: bigint, value: T): void {
    const w = this.#take(id);
    if (w !== undefined) w.resolve(value);
  }

  fail(id: bigint, error: unknown): void {
    const w = this.#take(id);
    if (w !== undefined) w.reject(error);
  }

  /** The member stops: every waiter fails, and no timer is left armed. */
  failAll(error: unknown): void {
    for (const id of [...this.#waiters.keys()]) this.fail(id, error);
    this.#deadlines.stop();
  }

  #take(id: bigint): Waiter<T> | undefined {
    const w = this.#waiters.get(id);
    if (w === undefined) return undefined;
    this.#waiters.delete(id);
    this.#deadlines.finish(w);
    return w;
  }

  /** Past its deadline; a waiter settled by an earlier one's onTimeout in the same round is no longer here. */
  #expire(w: Waiter<T>): void {
    if (this.#waiters.get(w.id) !== w) return;
    this.#waiters.delete(w.id);
    w.reject(w.onTimeout());
  }
}
