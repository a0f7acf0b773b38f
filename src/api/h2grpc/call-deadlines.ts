/**
 * The server's call deadlines (grpc-timeout) on one timer (issue 34). etcd's clients send a grpc-timeout on
 * every call, so a timer per call cost a setTimeout and a clearTimeout on every put. Here the calls sit in one
 * list ordered by deadline, one background (unref'd) timer is armed for the earliest, and a finished call is
 * only marked: it leaves the list once it reaches the head. This is the wait registry's scheme
 * (src/node/request/wait.ts) for calls whose timeouts differ by client.
 *
 * The timer lapses rather than being canceled when calls finish: with one client, each call would otherwise
 * arm and cancel it. It fires at the deadline it was armed for, expires what is due, and re-arms for the next
 * live call if there is one; a new call is re-armed for only when its deadline is earlier than the armed one.
 *
 * Bounded by the live calls: finished calls behind a long-lived one (a deadline far out, a stream) could
 * otherwise pile up until it ends, so the list is compacted when finished entries are most of it.
 *
 * Worked example: a (timeout 100 ms) at 0, b (100) at 10, c (50) at 20: list [c@70, a@100, b@110], timer
 * re-armed from 100 to 70. a finishes at 30: marked, stays (c is ahead). At 70 c expires; a is finished and
 * dropped; the timer re-arms at 110 for b.
 */
import type { Scheduler, TimerHandle } from '../../base/scheduler.js';

/** A call's place in the list; cancel() when the call ends before its deadline. */
export interface CallDeadline {
  cancel(): void;
}

class Entry implements CallDeadline {
  done = false;
  constructor(
    readonly deadlineMs: number,
    readonly onExpire: () => void,
    readonly list: CallDeadlines,
  ) {}

  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.list.finished(this);
  }
}

/** Compact once this many finished entries are listed and they outnumber the live ones. */
const finishedListedMin = 64;

export class CallDeadlines {
  /** Ascending deadlineMs from #head on; finished entries may remain until they reach the head. */
  #list: Entry[] = [];
  #head = 0;
  #live = 0;
  #timer: TimerHandle | undefined;
  /** The deadline the timer is armed for. */
  #timerMs = Infinity;
  readonly #scheduler: Scheduler;

  constructor(scheduler: Scheduler) {
    this.#scheduler = scheduler;
  }

  /** Calls not yet finished or expired. */
  get live(): number {
    return this.#live;
  }

  /** Entries in the list, finished ones not yet dropped included (tests watch it stay bounded). */
  get listed(): number {
    return this.#list.length - this.#head;
  }

  /** `onExpire` runs once, `timeoutMs` from now, unless the returned deadline is canceled first. */
  add(timeoutMs: number, onExpire: () => void): CallDeadline {
    const e = new Entry(this.#scheduler.nowMs() + timeoutMs, onExpire, this);
    this.#live++;
    this.#insert(e);
    if (e.deadlineMs < this.#timerMs) this.#arm(e.deadlineMs);
    return e;
  }

  /** Entry.cancel's half: the entry is already marked done. */
  finished(e: Entry): void {
    this.#live--;
    if (this.#live === 0) {
      // Nothing live: an empty list; the timer, if armed, lapses.
      this.#list = [];
      this.#head = 0;
    } else if (this.#list[this.#head] === e) {
      this.#trimHead();
    } else if (this.#list.length - this.#head - this.#live > Math.max(finishedListedMin, this.#live)) {
      this.#list = this.#list.filter((x, i) => i >= this.#head && !x.done);
      this.#head = 0;
    }
  }

  /** Binary search for the first entry due later than `e`: equal deadlines keep their arrival order. */
  #insert(e: Entry): void {
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
    if (this.#head > finishedListedMin && this.#head * 2 > list.length) {
      this.#list = list.slice(this.#head);
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

  #expire(): void {
    this.#timer = undefined;
    this.#timerMs = Infinity;
    const nowMs = this.#scheduler.nowMs();
    // Due entries leave the list before any handler runs: a handler may add or cancel other calls.
    const due: Entry[] = [];
    const list = this.#list;
    while (this.#head < list.length) {
      const e = list[this.#head]!;
      if (!e.done && e.deadlineMs > nowMs) break;
      this.#head++;
      if (e.done) continue;
      e.done = true;
      this.#live--;
      due.push(e);
    }
    this.#trimHead();
    const next = this.#list[this.#head];
    if (next !== undefined) this.#arm(next.deadlineMs);
    for (const e of due) e.onExpire();
  }
}
