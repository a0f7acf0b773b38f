/**
 * The history of one key, as etcd's keyIndex: a sequence of generations. A generation starts with the put
 * that creates the key and ends with a tombstone (the delete); the key's last generation may still be
 * live. We store the generations flattened, as one ascending list of revision codes (rev-code.ts) in which a
 * tombstone closes a generation: the same information as etcd's `[]generation`, with no object per revision.
 * Values live in the backend, not here; what the apply path needs without reading it (the current put's
 * create revision, version and lease, as etcd's generation keeps `created` and `ver`) is kept beside.
 *
 * Worked example (etcd's key_index.go): key "foo" put at 1.0, 2.0, 3.0, deleted at 4.0, put at 5.0, 6.0,
 * deleted at 7.0, put at 8.0:
 *   revisions:    1.0 2.0 3.0 4.0(t) | 5.0 6.0 7.0(t) | 8.0
 *   generations: {1.0, 2.0, 3.0, 4.0(t)} {5.0, 6.0, 7.0(t)} {8.0}
 * get(5) = 5.0 (version 1, created 5); get(4) = nothing (the latest revision ≤ 4 is a tombstone).
 * compact(2):  2.0 3.0 4.0(t) 5.0 ...        (1.0 dropped: 2.0 is the latest ≤ 2 and it is a put)
 * compact(4):  5.0 6.0 7.0(t) 8.0            (the latest ≤ 4 is the tombstone 4.0: dropped with its generation)
 * compact(5):  5.0 6.0 7.0(t) 8.0
 * compact(7):  8.0
 * compact(9):  8.0                           (the latest ≤ 9 is kept)
 * After a compaction that leaves no revision (the key's last generation ended at or before the compact
 * revision), the key disappears from the index.
 *
 * Memory (one of these per key, so every field counts; bench/heap-per-key.ts measures it): the key is a
 * latin1 string (key-text.ts), and a key with one revision, most of them, keeps that code as a bare number
 * instead of an array (a JS array of one double is 56 bytes: the array object and its backing store).
 */
import { assert } from '../base/assert.js';
import { keyText, keyTextBytes } from './key-text.js';
import { codeIsTombstone, codeMain, firstCodeOf } from './rev-code.js';

const noLease = 0n;
const noRevs: readonly number[] = Object.freeze([]);

type Revs = number | number[] | readonly number[];

// Module functions, not #private methods: a class with private methods gives every instance a brand field,
// 8 bytes on each of a million keys.
function lastOf(r: Revs): number | undefined {
  return typeof r === 'number' ? r : r[r.length - 1];
}

/** Index of the latest revision with main ≤ atRev, or -1. */
function latestAt(r: Revs, atRev: number): number {
  const bound = firstCodeOf(atRev + 1);
  if (typeof r === 'number') return r < bound ? 0 : -1;
  let lo = 0;
  let hi = r.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (r[mid]! < bound) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

export class KeyIndex {
  /** The key, latin1 (key-text.ts): the tree orders and finds keys by it. */
  readonly text: string;
  /**
   * Revision codes, ascending; never empty while the key is in the tree. One revision is held as the bare
   * code, more as an array (never one of length < 2), none as the shared empty array.
   */
  #revs: Revs = noRevs;
  /** Of the latest put (meaningful while the key is live): etcd's generation.created and ver, and the lease. */
  createRevision = 0;
  version = 0;
  lease: bigint = noLease;

  constructor(key: Uint8Array | string) {
    this.text = typeof key === 'string' ? key : keyText(key);
  }

  /** The key's bytes: a fresh owned copy on every call (the index keeps only the text). */
  get key(): Uint8Array {
    return keyTextBytes(this.text);
  }

  /** A key's history as saved by an index checkpoint (index-checkpoint.ts). */
  static restored(key: Uint8Array | string, revs: number[], createRevision: number, version: number, lease: bigint): KeyIndex {
    assert(revs.length > 0, 'a restored key index has revisions');
    for (let i = 1; i < revs.length; i++) assert(revs[i - 1]! < revs[i]!, 'restored key index revisions must increase');
    const ki = new KeyIndex(key);
    ki.#revs = revs.length === 1 ? revs[0]! : revs;
    ki.createRevision = createRevision;
    ki.version = version;
    ki.lease = lease === 0n ? noLease : lease;
    return ki;
  }

  /** How many revisions the key holds. */
  get revisionCount(): number {
    const r = this.#revs;
    return typeof r === 'number' ? 1 : r.length;
  }

  /** The i-th revision code, oldest first. */
  revisionAt(i: number): number {
    const r = this.#revs;
    assert(i >= 0 && i < this.revisionCount, 'key index position out of range');
    return typeof r === 'number' ? r : r[i]!;
  }

  /** The revision codes, ascending (a copy when the key holds one; never mutate it). */
  get revs(): readonly number[] {
    const r = this.#revs;
    return typeof r === 'number' ? [r] : r;
  }

  /** Record a put (createRevision/version/lease of the new current value) or a tombstone. */
  append(code: number, put?: { createRevision: number; version: number; lease: bigint }): void {
    const last = lastOf(this.#revs);
    assert(last === undefined || last < code, 'key index revisions must increase');
    const tombstone = codeIsTombstone(code);
    assert(!(tombstone && (last === undefined || codeIsTombstone(last))), 'tombstone on a key that does not exist');
    assert(tombstone === (put === undefined), 'a put carries its metadata, a tombstone none');
    const r = this.#revs;
    if (typeof r === 'number') this.#revs = [r, code];
    else if (r.length === 0) this.#revs = code;
    else (r as number[]).push(code);
    if (put !== undefined) {
      this.createRevision = put.createRevision;
      this.version = put.version;
      this.lease = put.lease === 0n ? noLease : put.lease;
    } else {
      this.createRevision = 0;
      this.version = 0;
      this.lease = noLease;
    }
  }

  /** The code of the live revision at atRev (a put), or undefined when the key does not exist then. */
  get(atRev: number): number | undefined {
    const i = latestAt(this.#revs, atRev);
    if (i < 0) return undefined;
    const code = this.revisionAt(i);
    return codeIsTombstone(code) ? undefined : code;
  }

  /** The current (latest) live revision's code. */
  current(): number | undefined {
    const code = lastOf(this.#revs);
    return code === undefined || codeIsTombstone(code) ? undefined : code;
  }

  /** Whether `code` is one of this key's revisions. */
  has(code: number): boolean {
    const i = latestAt(this.#revs, codeMain(code));
    for (let j = i; j >= 0 && codeMain(this.revisionAt(j)) === codeMain(code); j--) if (this.revisionAt(j) === code) return true;
    return false;
  }

  /** The revision just before `code` in this key's history (undefined at the first). */
  before(code: number): number | undefined {
    const r = this.#revs;
    const i = typeof r === 'number' ? (r === code ? 0 : -1) : r.indexOf(code);
    assert(i >= 0, 'revision not in the key index');
    return i === 0 ? undefined : this.revisionAt(i - 1);
  }

  /**
   * Drop every revision older than the latest one ≤ atRev, and that one too when it is a tombstone.
   * Returns the dropped codes (for the backend deletes). The caller removes the key when it is empty.
   */
  compact(atRev: number): number[] {
    const i = latestAt(this.#revs, atRev);
    if (i < 0) return [];
    const r = this.#revs;
    const dropCount = codeIsTombstone(this.revisionAt(i)) ? i + 1 : i;
    if (dropCount === 0) return [];
    if (typeof r === 'number') {
      this.#revs = noRevs;
      return [r];
    }
    const dropped = r.slice(0, dropCount);
    const kept = r.length - dropCount;
    this.#revs = kept === 0 ? noRevs : kept === 1 ? r[r.length - 1]! : r.slice(dropCount);
    return dropped;
  }

  isEmpty(): boolean {
    return this.revisionCount === 0;
  }

  /** The main revision of the latest change. */
  get modRevision(): number {
    const code = lastOf(this.#revs);
    assert(code !== undefined, 'modRevision of an empty key index');
    return codeMain(code);
  }
}
