/**
 * The ordered in-memory key index: KeyIndex objects sorted by key (unsigned bytes). A list of sorted chunks
 * (each ≤ chunkSizeMax entries) keeps inserts cheap for random keys (a splice of at most one chunk plus the
 * chunk directory) while lookups stay O(log n) and ranges O(log n + k).
 */
import { assert } from '../base/assert.js';
import { compareBytes } from '../base/bytes.js';
import { KeyIndex } from './key-index.js';

const chunkSizeMax = 512;

export class KeyTree {
  /** Non-empty chunks, each sorted; every key of chunk i < every key of chunk i+1. */
  #chunks: KeyIndex[][] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** First chunk whose last key ≥ key (or the last chunk). */
  #chunkFor(key: Uint8Array): number {
    let lo = 0;
    let hi = this.#chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = this.#chunks[mid]!;
      if (compareBytes(chunk[chunk.length - 1]!.key, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Position of the first entry ≥ key in a chunk. */
  static #lowerBound(chunk: KeyIndex[], key: Uint8Array): number {
    let lo = 0;
    let hi = chunk.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBytes(chunk[mid]!.key, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  get(key: Uint8Array): KeyIndex | undefined {
    if (this.#chunks.length === 0) return undefined;
    const chunk = this.#chunks[this.#chunkFor(key)]!;
    const ki = chunk[KeyTree.#lowerBound(chunk, key)];
    return ki !== undefined && compareBytes(ki.key, key) === 0 ? ki : undefined;
  }

  /** The key's index, created (empty) when absent. */
  getOrCreate(key: Uint8Array): KeyIndex {
    if (this.#chunks.length === 0) {
      const ki = new KeyIndex(key);
      this.#chunks.push([ki]);
      this.#size++;
      return ki;
    }
    const c = this.#chunkFor(key);
    const chunk = this.#chunks[c]!;
    const pos = KeyTree.#lowerBound(chunk, key);
    const found = chunk[pos];
    if (found !== undefined && compareBytes(found.key, key) === 0) return found;
    const ki = new KeyIndex(key);
    chunk.splice(pos, 0, ki);
    this.#size++;
    if (chunk.length > chunkSizeMax) this.#chunks.splice(c + 1, 0, chunk.splice(chunkSizeMax >>> 1));
    return ki;
  }

  /** Adds a key greater than every key in the tree (loading a checkpoint, which is in key order). */
  appendLast(ki: KeyIndex): void {
    const last = this.#chunks[this.#chunks.length - 1];
    assert(last === undefined || compareBytes(last[last.length - 1]!.key, ki.key) < 0, 'appendLast out of key order');
    // Chunks are left three-quarters full, so later random inserts do not split every one of them at once.
    if (last === undefined || last.length >= (chunkSizeMax * 3) >>> 2) this.#chunks.push([ki]);
    else last.push(ki);
    this.#size++;
  }

  delete(key: Uint8Array): void {
    if (this.#chunks.length === 0) return;
    const c = this.#chunkFor(key);
    const chunk = this.#chunks[c]!;
    const pos = KeyTree.#lowerBound(chunk, key);
    const found = chunk[pos];
    if (found === undefined || compareBytes(found.key, key) !== 0) return;
    chunk.splice(pos, 1);
    this.#size--;
    if (chunk.length === 0) this.#chunks.splice(c, 1);
  }

  /** Keys in [key, end) in order; an empty `end` means no upper bound. Stop early by returning false. */
  visit(key: Uint8Array, end: Uint8Array, f: (ki: KeyIndex) => boolean): void {
    if (this.#chunks.length === 0) return;
    let c = this.#chunkFor(key);
    let pos = KeyTree.#lowerBound(this.#chunks[c]!, key);
    for (; c < this.#chunks.length; c++, pos = 0) {
      const chunk = this.#chunks[c]!;
      for (; pos < chunk.length; pos++) {
        const ki = chunk[pos]!;
        if (end.length > 0 && compareBytes(ki.key, end) >= 0) return;
        if (!f(ki)) return;
      }
    }
  }

  /** Every key index, in key order. */
  *all(): IterableIterator<KeyIndex> {
    for (const chunk of this.#chunks) yield* chunk;
  }

  checkInvariants(): void {
    let prev: Uint8Array | undefined;
    let n = 0;
    for (const chunk of this.#chunks) {
      assert(chunk.length > 0 && chunk.length <= chunkSizeMax, 'key tree chunk size');
      for (const ki of chunk) {
        assert(prev === undefined || compareBytes(prev, ki.key) < 0, 'key tree order');
        prev = ki.key;
        n++;
      }
    }
    assert(n === this.#size, 'key tree size');
  }
}
