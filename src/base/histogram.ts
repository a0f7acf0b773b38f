/**
 * A fixed-bucket histogram: counts per upper bound (Prometheus `le`, inclusive) plus an implicit +Inf
 * bucket, with sum and count. One implementation for every histogram we keep: the WAL's (snapshotted by the
 * server at scrape time) and each label set of a registry histogram (src/metrics/metrics.ts).
 */
import { assert } from './assert.js';

export interface HistogramSnapshot {
  /** Upper bounds (le); an implicit +Inf bucket follows. */
  bounds: readonly number[];
  /** Cumulative counts per bound, then +Inf (length bounds.length + 1), as Prometheus exposes them. */
  cumulative: number[];
  sum: number;
  count: number;
}

/** Bounds must be at least one and strictly increasing; `what` names the histogram in the failure. */
export function assertBounds(bounds: readonly number[], what = 'histogram'): void {
  assert(bounds.length > 0, `${what} needs bounds`);
  for (let i = 1; i < bounds.length; i++) assert(bounds[i]! > bounds[i - 1]!, `bounds of ${what} must increase at ${i}`);
}

export class Histogram {
  readonly #bounds: readonly number[];
  /** Per bucket, not cumulative: the last one is +Inf. */
  readonly #counts: number[];
  #sum = 0;
  #count = 0;

  constructor(bounds: readonly number[]) {
    assertBounds(bounds);
    this.#bounds = bounds;
    this.#counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    let i = 0;
    while (i < this.#bounds.length && value > this.#bounds[i]!) i++;
    this.#counts[i]!++;
    this.#sum += value;
    this.#count++;
  }

  snapshot(): HistogramSnapshot {
    let acc = 0;
    const cumulative = this.#counts.map((c) => (acc += c));
    return { bounds: this.#bounds, cumulative, sum: this.#sum, count: this.#count };
  }
}
