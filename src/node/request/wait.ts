/**
 * The wait registry (etcd's pkg/wait): a proposer registers a request id before proposing and is woken with
 * the apply result when the entry carrying that id is applied on this member. Bounded: past the cap new
 * requests are refused ("too many requests"), so a stalled Raft cannot grow memory without limit.
 *
 * Deadlines share one timer (issue 34): a timer per request cost a setTimeout and a clearTimeout on every
 * put. Waiters sit in a list ordered by deadline (one timeout for all proposals, so a new one almost always
 * goes at the end); the one timer is armed for the earliest deadline and, when it fires, expires every waiter
 * that is due and re-arms for the next. A settled waiter stays in the list until it reaches the head, where it
 * is dropped without firing; the list is trimmed from the head on every register, so it stays about as long
 * as the pending requests.
 *
 * Worked example (timeouts 100 ms): a registered at 0, b at 10, c at 20: list [a@100, b@110, c@120], timer at
 * 100. b settles at 50 (marked, stays). At 100 a expires; head b is settled and dropped; timer re-armed at 120.
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
  }

  #take(id: bigint): Waiter<T> | undefined {
    const w = this.#waiters.get(id);
    if (w === undefined) return undefined;
    this.#waiters.delete(id);
    w.settled = true;
    if (this.#waiters.size === 0) this.#clear();
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
    this.#timer = this.#scheduler.after(Math.max(1, deadlineMs - this.#scheduler.nowMs()), () => this.#expire());
  }

  /** Nothing is waiting: no timer, an empty list. */
  #clear(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#timerMs = Infinity;
    this.#deadlines = [];
    this.#head = 0;
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
    else this.#clear();
  }
}
