/**
 * Waits for the applied index to reach a target (etcd's wait.WaitTime): linearizable reads wait here for
 * their read index, proposers of conf changes for the entry to be applied. Waiters are kept sorted by index;
 * each apply wakes the prefix that is satisfied.
 */
export class AppliedWait {
  #applied = 0;
  #waiters: Array<{ index: number; resolve: () => void }> = [];

  get applied(): number {
    return this.#applied;
  }

  wait(index: number): Promise<void> {
    if (index <= this.#applied) return Promise.resolve();
    return new Promise((resolve) => {
      // Insert keeping ascending order; most waits are for the newest index, so scan from the end.
      let i = this.#waiters.length;
      while (i > 0 && this.#waiters[i - 1]!.index > index) i--;
      this.#waiters.splice(i, 0, { index, resolve });
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
}
