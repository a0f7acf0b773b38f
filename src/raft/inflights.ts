/**
 * The bounded window of MsgApps in flight to one follower in replicate state: a ring buffer of the last
 * index each message carried, in increasing order. A full window pauses replication until acks free it.
 */
import { assert } from '../base/assert.js';

export class Inflights {
  #buffer: Float64Array;
  #start = 0;
  #count = 0;

  constructor(capacity: number) {
    assert(Number.isSafeInteger(capacity) && capacity > 0, `inflight capacity must be positive, got ${capacity}`);
    this.#buffer = new Float64Array(capacity);
  }

  get count(): number {
    return this.#count;
  }

  get capacity(): number {
    return this.#buffer.length;
  }

  full(): boolean {
    return this.#count === this.#buffer.length;
  }

  /** Record a MsgApp whose last entry is `index` (indexes must increase). */
  add(index: number): void {
    assert(!this.full(), 'inflights: add to a full window');
    const cap = this.#buffer.length;
    if (this.#count > 0) {
      const last = this.#buffer[(this.#start + this.#count - 1) % cap]!;
      assert(index > last, `inflights: index ${index} not after ${last}`);
    }
    this.#buffer[(this.#start + this.#count) % cap] = index;
    this.#count++;
  }

  /** An ack up to `index` frees every message whose last entry is ≤ index. */
  freeLE(index: number): void {
    const cap = this.#buffer.length;
    while (this.#count > 0 && this.#buffer[this.#start]! <= index) {
      this.#start = (this.#start + 1) % cap;
      this.#count--;
    }
    if (this.#count === 0) this.#start = 0;
  }

  /** Free the oldest slot: lets a follower whose acks were lost receive one more message (then reject). */
  freeFirstOne(): void {
    if (this.#count === 0) return;
    this.#start = (this.#start + 1) % this.#buffer.length;
    this.#count--;
  }

  reset(): void {
    this.#start = 0;
    this.#count = 0;
  }
}
