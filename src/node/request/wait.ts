/**
 * The wait registry (etcd's pkg/wait): a proposer registers a request id before proposing and is woken with
 * the apply result when the entry carrying that id is applied on this member. Bounded: past the cap new
 * requests are refused ("too many requests"), so a stalled Raft cannot grow memory without limit.
 *
 * Deadlines share one timer (issue 34): a timer per request cost a setTimeout and a clearTimeout on every
 * put. Waiters sit in a list ordered by deadline (one timeout for all proposals, so a new one almost always
 * goes at the end); the one timer is armed for the earliest deadline and, when it fires, expires every waiter
 * that is due and re-arms for the next.
 *
 * The timer is never canceled when a waiter settles, not even the last one: with one client, each put would
 * otherwise arm and cancel a timer (the registry empties after every put). It lapses instead: it fires once at
 * the deadline it was armed for, finds nothing due, and re-arms for the next waiter if there is one. Every
 * later registration has a later deadline than the armed one, so the steady state is one timer firing once per
 * timeout, whatever the rate of puts. It runs in the background (unref): a waiter's caller, not its deadline,
 * keeps the process alive. A settled waiter leaves the list as soon as it is at the head (answers come back
 * mostly in proposal order), so the list stays about as long as the pending requests.
 *
 * Worked example (timeouts 100 ms): a registered at 0, b at 10, c at 20: list [a@100, b@110, c@120], timer at
 * 100. b settles at 50 (marked, stays: a is ahead of it). At 100 a expires; head b is settled and dropped;
 * timer re-armed at 120. Had a settled at 60 instead, a and b would both have left the list then, and the
 * timer, still armed at 100, would have fired, found c not due and re-armed at 120.
 */
import { assert } from '../../base/assert.js';
import type { Scheduler, TimerHandle } from '../../base/scheduler.js';
import { realScheduler } from '../driver/real-scheduler.js';

interface Waiter<T> {
  id: bigint;
  deadlineMs: number;
  settled: boolean;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
  onTimeout: () => unknown;
}

export class WaitRegistry<T> {
  #waiters = new Map<bigint, Waiter<T>>();
  /** Ascending deadlineMs from #head on; settled waiters may remain until they reach the head. */
  #deadlines: Waiter<T>[] = [];
  #head = 0;
  #timer: TimerHandle | undefined;
  /** The deadline the timer is armed for. */
  #timerMs = Infinity;
  readonly #max: number;
  readonly #scheduler: Scheduler;

  constructor(max: number, scheduler: Scheduler = realScheduler) {
    assert(max > 0, 'wait registry needs room');
    this.#max = max;
    this.#scheduler = scheduler;
  }

  get size(): number {
    return this.#waiters.size;
  }

  /** Entries of the deadline list, settled ones not yet dropped included: about `size` (tests watch it). */
  get listed(): number {
    return this.#deadlines.length - this.#head;
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
      w = { id, deadlineMs, settled: false, resolve, reject, onTimeout };
    });
    this.#waiters.set(id, w);
    this.#trimHead();
    this.#insert(w);
    if (deadlineMs < this.#timerMs) this.#arm(deadlineMs);
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

  failAll(error: unknown): void {
    for (const id of [...this.#waiters.keys()]) this.fail(id, error);
    this.#disarm();
  }

  #take(id: bigint): Waiter<T> | undefined {
    const w = this.#waiters.get(id);
    if (w === undefined) return undefined;
    this.#waiters.delete(id);
    w.settled = true;
    if (this.#waiters.size === 0) this.#empty();
    else if (this.#deadlines[this.#head] === w) this.#trimHead();
    return w;
  }

  /** Inserts by deadline, scanning from the end: with one timeout for all, a new waiter is the latest. */
  #insert(w: Waiter<T>): void {
    const list = this.#deadlines;
    let i = list.length;
    while (i > this.#head && list[i - 1]!.deadlineMs > w.deadlineMs) i--;
    if (i === list.length) list.push(w);
    else list.splice(i, 0, w);
  }

  #trimHead(): void {
    const list = this.#deadlines;
    while (this.#head < list.length && list[this.#head]!.settled) this.#head++;
    // Compact once the dropped prefix is most of the array, so the array does not grow with throughput.
    if (this.#head > 64 && this.#head * 2 > list.length) {
      this.#deadlines = list.slice(this.#head);
      this.#head = 0;
    }
  }

  #arm(deadlineMs: number): void {
    this.#timer?.cancel();
    this.#timerMs = deadlineMs;
    // At least 1 ms: Node's timers run on the loop's millisecond clock and may fire a fraction of a
    // millisecond before performance.now() reaches the deadline; then this re-arms, never spins.
    const delayMs = Math.max(1, deadlineMs - this.#scheduler.nowMs());
    this.#timer = this.#scheduler.after(delayMs, () => this.#expire(), { background: true });
  }

  /** Nothing is waiting: an empty list; the timer, if armed, lapses (see the top of the file). */
  #empty(): void {
    this.#deadlines = [];
    this.#head = 0;
  }

  /** The registry is done (the member stops): no timer either. */
  #disarm(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#timerMs = Infinity;
  }

  #expire(): void {
    this.#timer = undefined;
    this.#timerMs = Infinity;
    const nowMs = this.#scheduler.nowMs();
    const list = this.#deadlines;
    while (this.#head < list.length) {
      const w = list[this.#head]!;
      if (!w.settled && w.deadlineMs > nowMs) break;
      this.#head++;
      if (w.settled) continue;
      this.#waiters.delete(w.id);
      w.settled = true;
      w.reject(w.onTimeout());
    }
    this.#trimHead();
    const next = this.#deadlines[this.#head];
    if (next !== undefined) this.#arm(next.deadlineMs);
  }
}
