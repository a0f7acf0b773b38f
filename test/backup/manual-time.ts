/** A manual wall clock with a timer port, for the schedulers' tests (snapshots, off-site uploads). */
export class ManualTime {
  nowMs: number;
  #timers: Array<{ at: number; fn: () => void; id: number }> = [];
  #nextId = 1;
  constructor(startMs: number) {
    this.nowMs = startMs;
  }
  readonly timers = {
    setTimeout: (fn: () => void, ms: number): unknown => {
      const id = this.#nextId++;
      this.#timers.push({ at: this.nowMs + ms, fn, id });
      return id;
    },
    clearTimeout: (id: unknown): void => {
      this.#timers = this.#timers.filter((t) => t.id !== id);
    },
  };
  get pending(): number {
    return this.#timers.length;
  }
  /** How long until each armed timer fires. */
  get waitsMs(): number[] {
    return this.#timers.map((t) => t.at - this.nowMs);
  }
  /** Fires the earliest timer only (the clock jumps to it). */
  fireNext(): void {
    this.#timers.sort((a, b) => a.at - b.at);
    const t = this.#timers.shift();
    if (t === undefined) throw new Error('no timer armed');
    this.nowMs = Math.max(this.nowMs, t.at);
    t.fn();
  }
  advance(ms: number): void {
    const until = this.nowMs + ms;
    for (;;) {
      this.#timers.sort((a, b) => a.at - b.at);
      const t = this.#timers[0];
      if (t === undefined || t.at > until) break;
      this.#timers.shift();
      this.nowMs = Math.max(this.nowMs, t.at);
      t.fn();
    }
    this.nowMs = until;
  }
}
