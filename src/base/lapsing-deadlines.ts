/**
 * Many deadlines on one timer (issue 34), for the wait registry (src/node/request/wait.ts: one timeout for
 * every proposal) and the gRPC server's call deadlines (src/api/h2grpc/call-deadlines.ts: a grpc-timeout per
 * client). A timer per deadline cost arming and canceling one on every put. Here the entries sit in one
 * list ordered by deadline, one background (unref'd) timer is armed for the earliest, and a finished entry is
 * only marked: it leaves the list once it reaches the head (answers come back mostly in order).
 *
 * The timer lapses rather than being canceled when entries finish, even the last one: with one client, each
 * put would otherwise arm and cancel it. It fires at the deadline it was armed for, expires what is due, and
 * re-arms for the next live entry if there is one; a new entry is re-armed for only when its deadline is
 * earlier than the armed one. With one timeout for all, the steady state is one timer firing once per
 * timeout, whatever the rate of puts. It runs in the background: an entry's owner, not its deadline, keeps
 * the process alive.
 *
 * Bounded by the live entries: finished entries behind a long-lived one (a deadline far out, a stream) could
 * otherwise pile up until it ends, so the list is compacted when finished entries are most of it.
 *
 * Worked example: a (timeout 100 ms) at 0, b (100) at 10, c (50) at 20: list [c@70, a@100, b@110], timer
 * re-armed from 100 to 70. a finishes at 30: marked, stays (c is ahead). At 70 c expires; a is finished and
 * dropped; the timer re-arms at 110 for b. Had b finished at 80 too, the list would be empty then, and the
 * timer, still armed at 110, would fire, find nothing and lapse.
 *
 * The entries are the owner's own records (a call, a waiter), so an entry costs no object or closure beyond
 * them; the list sets `done`, the owner never does.
 */
import { assert } from './assert.js';
import { deadlinesFinishedListedMin } from './limits.js';
import type { Scheduler, TimerHandle } from './scheduler.js';

export interface Lapsing {
  readonly deadlineMs: number;
  /** Finished or expired: set by the list only. */
  done: boolean;
}

export class LapsingDeadlines<E extends Lapsing> {
  /** Ascending deadlineMs from #head on; finished entries may remain until they reach the head. */
  #list: E[] = [];
  #head = 0;
  #live = 0;
  #timer: TimerHandle | undefined;
  /** The deadline the timer is armed for. */
  #timerMs = Infinity;
  readonly #scheduler: Scheduler;
  readonly #onExpire: (e: E) => void;
  /** One closure for every arm. */
  readonly #fire = (): void => this.#expire();

  /** `onExpire` runs once for each entry whose deadline passes before it is finished. */
  constructor(scheduler: Scheduler, onExpire: (e: E) => void) {
    this.#scheduler = scheduler;
    this.#onExpire = onExpire;
  }

  /** Entries neither finished nor expired. */
  get live(): number {
    return this.#live;
  }

  /** Entries in the list, finished ones not yet dropped included (tests watch it stay bounded). */
  get listed(): number {
    return this.#list.length - this.#head;
  }

  add(e: E): void {
    assert(!e.done, 'a finished deadline added again');
    this.#live++;
    this.#insert(e);
    if (e.deadlineMs < this.#timerMs) this.#arm(e.deadlineMs);
  }

  /** The entry ended before its deadline: it never expires. Idempotent, and a no-op once expired. */
  finish(e: E): void {
    if (e.done) return;
    e.done = true;
    this.#live--;
    if (this.#live === 0) {
      // Nothing live: an empty list; the timer, if armed, lapses.
      this.#list = [];
      this.#head = 0;
    } else if (this.#list[this.#head] === e) {
      this.#trimHead();
    } else if (this.#list.length - this.#head - this.#live > Math.max(deadlinesFinishedListedMin, this.#live)) {
      this.#list = this.#list.filter((x, i) => i >= this.#head && !x.done);
      this.#head = 0;
    }
  }

  /** The owner is done (a member stops) and has finished every entry: no timer left either. */
  stop(): void {
    assert(this.#live === 0, 'deadlines stopped with live entries');
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#timerMs = Infinity;
  }

  /**
   * Equal deadlines keep their arrival order. With one timeout for all, a new entry is the latest: pushed;
   * otherwise a binary search for the first entry due later.
   */
  #insert(e: E): void {
    const list = this.#list;
    const last = list[list.length - 1];
    if (last === undefined || last.deadlineMs <= e.deadlineMs) return void list.push(e);
    let lo = this.#head;
    let hi = list.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (list[mid]!.deadlineMs <= e.deadlineMs) lo = mid + 1;
      else hi = mid;
    }
    list.splice(lo, 0, e);
  }

  #trimHead(): void {
    const list = this.#list;
    while (this.#head < list.length && list[this.#head]!.done) this.#head++;
    // Compact once the dropped prefix is most of the array, so the array does not grow with throughput.
    if (this.#head > deadlinesFinishedListedMin && this.#head * 2 > list.length) {
      this.#list = list.slice(this.#head);
      this.#head = 0;
    }
  }

  #arm(deadlineMs: number): void {
    this.#timer?.cancel();
    this.#timerMs = deadlineMs;
    // At least 1 ms: Node's timers run on the loop's millisecond clock and may fire a fraction of a
    // millisecond before the scheduler's nowMs() reaches the deadline; then this re-arms, never spins.
    const delayMs = Math.max(1, deadlineMs - this.#scheduler.nowMs());
    this.#timer = this.#scheduler.after(delayMs, this.#fire, { background: true });
  }

  #expire(): void {
    this.#timer = undefined;
    this.#timerMs = Infinity;
    const nowMs = this.#scheduler.nowMs();
    // Due entries leave the list before any handler runs: a handler may add or finish other entries.
    let due: E[] | undefined;
    const list = this.#list;
    while (this.#head < list.length) {
      const e = list[this.#head]!;
      if (!e.done && e.deadlineMs > nowMs) break;
      this.#head++;
      if (e.done) continue;
      e.done = true;
      this.#live--;
      (due ??= []).push(e);
    }
    this.#trimHead();
    const next = this.#list[this.#head];
    if (next !== undefined) this.#arm(next.deadlineMs);
    if (due !== undefined) for (const e of due) this.#onExpire(e);
  }
}
