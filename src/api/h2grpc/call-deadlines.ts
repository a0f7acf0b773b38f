/**
 * The server's call deadlines (grpc-timeout) on one timer (issue 34): etcd's clients send a grpc-timeout on
 * every call, so a timer per call cost a setTimeout and a clearTimeout on every put. The calls' timeouts
 * differ by client; the lapsing timer, its ordered list and its bound are src/base/lapsing-deadlines.ts.
 */
import { LapsingDeadlines, type Lapsing } from '../../base/lapsing-deadlines.js';
import type { Scheduler } from '../../base/scheduler.js';

/** A call's place in the list; cancel() when the call ends before its deadline. */
export interface CallDeadline {
  cancel(): void;
}

class Entry implements CallDeadline, Lapsing {
  done = false;
  constructor(
    readonly deadlineMs: number,
    readonly onExpire: () => void,
    readonly list: LapsingDeadlines<Entry>,
  ) {}

  cancel(): void {
    this.list.finish(this);
  }
}

const expire = (e: Entry): void => e.onExpire();

export class CallDeadlines {
  readonly #deadlines: LapsingDeadlines<Entry>;
  readonly #scheduler: Scheduler;

  constructor(scheduler: Scheduler) {
    this.#scheduler = scheduler;
    this.#deadlines = new LapsingDeadlines(scheduler, expire);
  }

  /** Calls not yet finished or expired. */
  get live(): number {
    return this.#deadlines.live;
  }

  /** Entries in the list, finished ones not yet dropped included (tests watch it stay bounded). */
  get listed(): number {
    return this.#deadlines.listed;
  }

  /** `onExpire` runs once, `timeoutMs` from now, unless the returned deadline is canceled first. */
  add(timeoutMs: number, onExpire: () => void): CallDeadline {
    const e = new Entry(this.#scheduler.nowMs() + timeoutMs, onExpire, this.#deadlines);
    this.#deadlines.add(e);
    return e;
  }
}
