/**
 * The set of watchers the hub feeds live (etcd's watcher_group.go; a Watcher itself: watch-stream.ts):
 * single-key watchers are found by a map lookup, range watchers by a scan (ranges are few in practice; 1,000
 * prefix watchers cost ~1,000 byte comparisons per event, measured in bench/watch.bench.ts).
 */
import { assert, compareBytes } from '../base/index.js';
import type { Watcher, WatcherState } from './watch-stream.js';

export type { Watcher, WatcherState };

export function watcherMatches(w: Watcher, key: Uint8Array): boolean {
  if (w.end === null) return compareBytes(key, w.key) === 0;
  if (compareBytes(key, w.key) < 0) return false;
  return w.end.length === 0 || compareBytes(key, w.end) < 0;
}

/** Keys as map keys: one char per byte (latin1), exact and cheap for short keys. */
export function keyString(key: Uint8Array): string {
  let s = '';
  for (let i = 0; i < key.length; i++) s += String.fromCharCode(key[i]!);
  return s;
}

export class WatcherGroup {
  #byKey = new Map<string, Set<Watcher>>();
  #ranges = new Set<Watcher>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(w: Watcher): void {
    if (w.end === null) {
      const k = keyString(w.key);
      let set = this.#byKey.get(k);
      if (set === undefined) this.#byKey.set(k, (set = new Set()));
      assert(!set.has(w), 'watcher added twice');
      set.add(w);
    } else {
      assert(!this.#ranges.has(w), 'watcher added twice');
      this.#ranges.add(w);
    }
    this.#size++;
  }

  /** Returns whether the watcher was in the group. */
  delete(w: Watcher): boolean {
    let removed: boolean;
    if (w.end === null) {
      const k = keyString(w.key);
      const set = this.#byKey.get(k);
      removed = set?.delete(w) ?? false;
      if (set !== undefined && set.size === 0) this.#byKey.delete(k);
    } else {
      removed = this.#ranges.delete(w);
    }
    if (removed) this.#size--;
    return removed;
  }

  /** Calls fn for every watcher whose key or range holds key. */
  forEachMatching(key: Uint8Array, fn: (w: Watcher) => void): void {
    if (this.#byKey.size > 0) {
      const set = this.#byKey.get(keyString(key));
      if (set !== undefined) for (const w of set) fn(w);
    }
    for (const w of this.#ranges) if (watcherMatches(w, key)) fn(w);
  }
}
