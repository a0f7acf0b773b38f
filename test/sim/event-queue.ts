/**
 * A min-heap of timed events, ordered by (time, insertion sequence) so that events due at the same instant run
 * in the order they were scheduled: the simulation stays a pure function of its seed.
 */
export interface Timed<T> {
  timeStep: number;
  seq: number;
  value: T;
}

export class EventQueue<T> {
  #heap: Timed<T>[] = [];
  #seq = 0;

  get size(): number {
    return this.#heap.length;
  }

  push(timeStep: number, value: T): void {
    const item: Timed<T> = { timeStep, seq: this.#seq++, value };
    const h = this.#heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  peekTime(): number | undefined {
    return this.#heap[0]?.timeStep;
  }

  pop(): Timed<T> | undefined {
    const h = this.#heap;
    const top = h[0];
    if (top === undefined) return undefined;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && less(h[l]!, h[m]!)) m = l;
        if (r < h.length && less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }

  /** Remove every event matching `drop` (used when a node crashes: its pending disk completions vanish). */
  removeWhere(drop: (value: T) => boolean): void {
    const kept = this.#heap.filter((e) => !drop(e.value));
    this.#heap = [];
    for (const e of kept.sort((a, b) => (less(a, b) ? -1 : 1))) this.#heap.push(e);
  }
}

function less<T>(a: Timed<T>, b: Timed<T>): boolean {
  return a.timeStep < b.timeStep || (a.timeStep === b.timeStep && a.seq < b.seq);
}
