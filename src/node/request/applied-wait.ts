/**
 * Waits for the applied index to reach a target (etcd's wait.WaitTime): linearizable reads wait here for
 * their read index, proposers of conf changes for the entry to be applied. Waiters are kept sorted by index;
 * each apply wakes the prefix that is satisfied. A stopping member fails every waiter (failAll), and any wait
 * after it: apply has stopped, so nothing would wake them.
 */
export class AppliedWait {
  #applied = 0;
  #waiters: Array<{ index: number; resolve: () => void; reject: (error: unknown) => void }> = [];
  /** Set once the member stops: the error every wait gets from then on. */
  #failed: { error: unknown } | undefined;

  get applied(): number {
    return this.#applied;
  }

  /** Waiters not woken yet. */
  get waiting(): number {
    return this.#waiters.length;
  }

  wait(index: number): Promise<void> {
    if (index <= this.#applied) return Promise.resolve();
    if (this.#failed !== undefined) return Promise.reject(this.#failed.error);
    return new Promise((resolve, reject) => {
      // Insert keeping ascending order; most waits are for the newest index, so scan from the end.
      let i = this.#waiters.length;
      while (i > 0 && this.#waiters[i - 1]!.index > index) i--;
      this.#waiters.splice(i, 0, { index, resolve, reject });
    });
  }

  advance(applied: number): void {
    if (applied <= this.#applied) return;
    this.#applied = applied;
    let n = 0;
    while (n < this.#waiters.length && this.#waiters[n]!.index <= applied) n++;
    if (n === 0) return;
    const woken = this.#waiters.splice(0, n);
    for (const w of woken) w.resolve();
  }

  /** The member stops: every waiter, and every later wait for an index not applied yet, fails with `error`. */
  failAll(error: unknown): void {
    this.#failed ??= { error };
    const all = this.#waiters;
    this.#waiters = [];
    for (const w of all) w.reject(error);
  }
}
