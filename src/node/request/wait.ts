/**
 * The wait registry (etcd's pkg/wait): a proposer registers a request id before proposing and is woken with
 * the apply result when the entry carrying that id is applied on this member. Bounded: past the cap new
 * requests are refused ("too many requests"), so a stalled Raft cannot grow memory without limit.
 */
import { assert } from '../../base/assert.js';
import type { Scheduler, TimerHandle } from '../../base/scheduler.js';
import { realScheduler } from '../driver/real-scheduler.js';

interface Waiter<T> {
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
  timer: TimerHandle;
}

export class WaitRegistry<T> {
  #waiters = new Map<bigint, Waiter<T>>();
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
    return new Promise<T>((resolve, reject) => {
      const timer = this.#scheduler.after(timeoutMs, () => {
        this.#waiters.delete(id);
        reject(onTimeout());
      });
      this.#waiters.set(id, { resolve, reject, timer });
    });
  }

  has(id: bigint): boolean {
    return this.#waiters.has(id);
  }

  trigger(id: bigint, value: T): void {
    const w = this.#waiters.get(id);
    if (w === undefined) return;
    this.#waiters.delete(id);
    w.timer.cancel();
    w.resolve(value);
  }

  fail(id: bigint, error: unknown): void {
    const w = this.#waiters.get(id);
    if (w === undefined) return;
    this.#waiters.delete(id);
    w.timer.cancel();
    w.reject(error);
  }

  failAll(error: unknown): void {
    for (const id of [...this.#waiters.keys()]) this.fail(id, error);
  }
}
