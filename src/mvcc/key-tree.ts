/**
 * The ordered in-memory key index: KeyIndex objects sorted by key (unsigned bytes). A list of sorted chunks
 * (each ≤ chunkSizeMax entries) keeps inserts cheap for random keys (a splice of at most one chunk plus the
 * chunk directory) while lookups stay O(log n) and ranges O(log n + k). Keys are compared as their latin1
 * text (key-text.ts), whose native string order is the unsigned byte order; methods take either form.
 */
import { assert } from '../base/assert.js';
import { KeyIndex } from './key-index.js';
import { keyText } from './key-text.js';

const textOf = (key: Uint8Array | string): string => (typeof key === 'string' ? key : keyText(key));

const chunkSizeMax = 512;

export class KeyTree {
  /** Non-empty chunks, each sorted; every key of chunk i < every key of chunk i+1. */
  #chunks: KeyIndex[][] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** First chunk whose last key ≥ key (or the last chunk). */
  #chunkFor(key: string): number {
    let lo = 0;
    let hi = this.#chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const chunk = this.#chunks[mid]!;
      if (chunk[chunk.length - 1]!.text < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Position of the first entry ≥ key in a chunk. */
  static #lowerBound(chunk: KeyIndex[], key: string): number {
    let lo = 0;
    let hi = chunk.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (chunk[mid]!.text < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  get(keyOrText: Uint8Array | string): KeyIndex | undefined {
    if (this.#chunks.length === 0) return undefined;
    const key = textOf(keyOrText);
    const chunk = this.#chunks[this.#chunkFor(key)]!;
    const ki = chunk[KeyTree.#lowerBound(chunk, key)];
    return ki !== undefined && ki.text === key ? ki : undefined;
  }

  /** The key's index, created (empty) when absent. */
  getOrCreate(keyOrText: Uint8Array | string): KeyIndex {
    const key = textOf(keyOrText);
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
    if (found !== undefined && found.text === key) return found;
    const ki = new KeyIndex(key);
    chunk.splice(pos, 0, ki);
    this.#size++;
    if (chunk.length > chunkSizeMax) {
      // Keys arriving about in order (a bulk load by a few writers, a restore) would leave every chunk half
      // full (8 bytes a slot; measured 18 bytes a key): the last chunk splits where the insert landed, when
      // that is in its upper half, so the chunks left behind stay fuller.
      const at = c === this.#chunks.length - 1 ? Math.max(chunkSizeMax >>> 1, Math.min(pos, chunkSizeMax)) : chunkSizeMax >>> 1;
      // Both halves are fresh arrays: the grown one would keep its capacity (V8 does not shrink on splice).
      this.#chunks.splice(c, 1, chunk.slice(0, at), chunk.slice(at));
    }
    return ki;
  }

  /** Adds a key greater than every key in the tree (loading a checkpoint, which is in key order). */
  appendLast(ki: KeyIndex): void {
    const last = this.#chunks[this.#chunks.length - 1];
    assert(last === undefined || last[last.length - 1]!.text < ki.text, 'appendLast out of key order');
    // Chunks are left three-quarters full, so later random inserts do not split every one of them at once.
    if (last === undefined || last.length >= (chunkSizeMax * 3) >>> 2) this.#chunks.push([ki]);
    else last.push(ki);
    this.#size++;
  }

  delete(keyOrText: Uint8Array | string): void {
    if (this.#chunks.length === 0) return;
    const key = textOf(keyOrText);
    const c = this.#chunkFor(key);
    const chunk = this.#chunks[c]!;
    const pos = KeyTree.#lowerBound(chunk, key);
    const found = chunk[pos];
    if (found === undefined || found.text !== key) return;
    chunk.splice(pos, 1);
    this.#size--;
    if (chunk.length === 0) this.#chunks.splice(c, 1);
  }

  /** Keys in [key, end) in order; an empty `end` means no upper bound. Stop early by returning false. */
  visit(keyOrText: Uint8Array | string, endOrText: Uint8Array | string, f: (ki: KeyIndex) => boolean): void {
    if (this.#chunks.length === 0) return;
    const key = textOf(keyOrText);
    const end = textOf(endOrText);
    let c = this.#chunkFor(key);
    let pos = KeyTree.#lowerBound(this.#chunks[c]!, key);
    for (; c < this.#chunks.length; c++, pos = 0) {
      const chunk = this.#chunks[c]!;
      for (; pos < chunk.length; pos++) {
        const ki = chunk[pos]!;
        if (end.length > 0 && ki.text >= end) return;
        if (!f(ki)) return;
      }
    }
  }

  /** Every key index, in key order. */
  *all(): IterableIterator<KeyIndex> {
    for (const chunk of this.#chunks) yield* chunk;
  }

  checkInvariants(): void {
    let prev: string | undefined;
    let n = 0;
    for (const chunk of this.#chunks) {
      assert(chunk.length > 0 && chunk.length <= chunkSizeMax, 'key tree chunk size');
      for (const ki of chunk) {
        assert(prev === undefined || prev < ki.text, 'key tree order');
        prev = ki.text;
        n++;
      }
    }
    assert(n === this.#size, 'key tree size');
  }
}
