/**
 * Every revision the store still holds, in revision order, as codes (rev-code.ts) in one growable
 * Float64Array: 8 bytes per revision. It answers "which revisions lie in [from, to]" for watch catch-up and
 * HashKV without touching the backend; the key index answers per key.
 */
import { assert } from '../base/assert.js';
import { firstCodeOf } from './rev-code.js';

const initialCapacity = 1024;

export class RevisionLog {
  #codes = new Float64Array(initialCapacity);
  #length = 0;

  get length(): number {
    return this.#length;
  }

  at(i: number): number {
    assert(i >= 0 && i < this.#length, 'revision log index out of range');
    return this.#codes[i]!;
  }

  push(code: number): void {
    assert(this.#length === 0 || this.#codes[this.#length - 1]! < code, 'revision log must increase');
    if (this.#length === this.#codes.length) {
      const grown = new Float64Array(this.#codes.length * 2);
      grown.set(this.#codes);
      this.#codes = grown;
    }
    this.#codes[this.#length++] = code;
  }

  /** Replaces the contents with `codes`, which must be ascending (loading a checkpoint). */
  loadSorted(codes: Float64Array<ArrayBuffer>): void {
    assert(this.#length === 0, 'loadSorted on a non-empty revision log');
    for (let i = 1; i < codes.length; i++) assert(codes[i - 1]! < codes[i]!, 'revision log must increase');
    this.#codes = codes.length >= initialCapacity ? codes : new Float64Array(initialCapacity);
    if (codes.length < initialCapacity) this.#codes.set(codes);
    this.#length = codes.length;
  }

  /** Position of the first revision with main ≥ `main`. */
  lowerBoundMain(main: number): number {
    const bound = firstCodeOf(main);
    let lo = 0;
    let hi = this.#length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#codes[mid]! < bound) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Keep the codes for which `keep` is true (order is preserved); shrinks the array when mostly empty. */
  retain(keep: (code: number) => boolean): void {
    let n = 0;
    for (let i = 0; i < this.#length; i++) {
      const c = this.#codes[i]!;
      if (keep(c)) this.#codes[n++] = c;
    }
    this.#length = n;
    if (this.#codes.length > initialCapacity && n < this.#codes.length / 4) {
      this.#codes = this.#codes.slice(0, Math.max(initialCapacity, n * 2));
    }
  }

  *[Symbol.iterator](): IterableIterator<number> {
    for (let i = 0; i < this.#length; i++) yield this.#codes[i]!;
  }
}
