/**
 * The history of one key, as etcd's keyIndex: a sequence of generations. A generation starts with the put
 * that creates the key and ends with a tombstone (the delete); the key's last generation may still be
 * live. We store the generations flattened, as one revision-ordered list of entries in which a tombstone
 * closes a generation: the same information as etcd's `[]generation`, with fewer objects per key.
 *
 * Worked example (etcd's key_index.go): key "foo" put at 1.0, 2.0, 3.0, deleted at 4.0, put at 5.0, 6.0,
 * deleted at 7.0, put at 8.0:
 *   entries:      1.0 2.0 3.0 4.0(t) | 5.0 6.0 7.0(t) | 8.0
 *   generations: {1.0, 2.0, 3.0, 4.0(t)} {5.0, 6.0, 7.0(t)} {8.0}
 * get(5) = 5.0 (version 1, created 5); get(4) = nothing (the latest entry ≤ 4 is a tombstone).
 * compact(2):  2.0 3.0 4.0(t) 5.0 ...        (1.0 dropped: 2.0 is the latest ≤ 2 and it is a put)
 * compact(4):  5.0 6.0 7.0(t) 8.0            (the latest ≤ 4 is the tombstone 4.0: dropped with its generation)
 * compact(5):  5.0 6.0 7.0(t) 8.0
 * compact(7):  8.0
 * compact(9):  8.0                           (the latest ≤ 9 is kept)
 * After a compaction that leaves no entry (the key's last generation ended at or before the compact
 * revision), the key disappears from the index.
 */
import { assert } from '../base/assert.js';
import type { KeyValue } from './types.js';

/** One revision of one key; shared by the key index and the store's history list. */
export interface HistoryEntry {
  readonly main: number;
  readonly sub: number;
  readonly tombstone: boolean;
  /** For a tombstone: key only, modRevision = main (the delete event's kv), other fields zero. */
  readonly kv: KeyValue;
}

const emptyEntries: HistoryEntry[] = Object.freeze([]) as unknown as HistoryEntry[];

export class KeyIndex {
  readonly key: Uint8Array;
  /**
   * Revision order; never empty while the key is in the tree. Most keys hold one entry: the array starts
   * as an exact-size literal (an empty array grows to 17 slots on its first push: 136 bytes per key).
   */
  entries: HistoryEntry[] = emptyEntries;

  constructor(key: Uint8Array) {
    this.key = key;
  }

  append(entry: HistoryEntry): void {
    const last = this.entries[this.entries.length - 1];
    assert(last === undefined || last.main < entry.main || (last.main === entry.main && last.sub < entry.sub), 'key index revisions must increase');
    assert(!(entry.tombstone && (last === undefined || last.tombstone)), 'tombstone on a key that does not exist');
    if (this.entries.length === 0) this.entries = [entry];
    else this.entries.push(entry);
  }

  /** Index of the latest entry with main ≤ atRev, or -1. */
  #latestAt(atRev: number): number {
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.entries[mid]!.main <= atRev) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /** The live entry at atRev (a put), or undefined when the key does not exist then. */
  get(atRev: number): HistoryEntry | undefined {
    const i = this.#latestAt(atRev);
    if (i < 0) return undefined;
    const e = this.entries[i]!;
    return e.tombstone ? undefined : e;
  }

  /** The current (latest) live entry. */
  current(): HistoryEntry | undefined {
    const e = this.entries[this.entries.length - 1];
    return e === undefined || e.tombstone ? undefined : e;
  }

  /** The entry compaction at atRev keeps (the latest ≤ atRev unless a tombstone), as etcd's keep(). */
  kept(atRev: number): HistoryEntry | undefined {
    return this.get(atRev);
  }

  /**
   * Drop every entry older than the latest one ≤ atRev, and that one too when it is a tombstone.
   * Returns the dropped entries (for the backend deletes). The caller removes the key when it is empty.
   */
  compact(atRev: number): HistoryEntry[] {
    const i = this.#latestAt(atRev);
    if (i < 0) return [];
    const dropCount = this.entries[i]!.tombstone ? i + 1 : i;
    return this.entries.splice(0, dropCount);
  }

  isEmpty(): boolean {
    return this.entries.length === 0;
  }
}
