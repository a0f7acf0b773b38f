/**
 * The in-memory Raft log: an optional snapshot followed by contiguous entries, with the markers that connect
 * it to the driver's disk and state machine.
 *
 *   compacted  | firstIndex ...                                        lastIndex
 *   [snapshot] | e e e e e e e e e e e e e e e e e e e e e e e e e e e e
 *                      ^applied   ^committedHandedOut   ^committed
 *                                          ^stable (acked durable)   ^handedOut (given to a Ready)
 *
 * Invariants (asserted): firstIndex-1 ≤ committed ≤ lastIndex; applied ≤ committedHandedOut ≤
 * min(committed, stable) (apart from a restored snapshot, whose index is applied by restoring it), or
 * ≤ committed alone with applyUnstable; a truncation never reaches at or below committed; stable and
 * handedOut never exceed lastIndex; entries above stable are never released (a later ack names them).
 *
 * Rewrites and acknowledgements. The driver writes Readies in order but acknowledges each one later, so when
 * Ready k's ack arrives, the writes of later Readies may already be on disk, partly or wholly, without being
 * durable. An ack therefore vouches only for indexes below the lowest index any later Ready rewrote (raft-rs's
 * first_update_index). Checking the ack's (index, term) against the log is not enough (A-B-A): Ready 1 writes
 * 5–7 at term 2, Ready 2 overwrites them at term 3, Ready 3 rewrites them at term 2. Ready 1's ack matches
 * (7, 2) again, yet a crash before Ready 3 is durable can leave term 3 at 5–7 on disk. Here Ready 1's ack
 * counts for nothing above 4 (Ready 2 rewrote from 5); Ready 3's ack makes 7 stable.
 */
import { assert } from '../base/assert.js';
import type { Entry, PersistAck, Snapshot, SnapshotMeta } from './types.js';

/** Per-entry framing counted against byte limits, so empty entries are not free. */
const entryOverheadBytes = 16;

export function entryBytes(e: Entry): number {
  return e.data.byteLength + entryOverheadBytes;
}

export interface TermHint {
  index: number;
  term: number;
}

export class RaftLog {
  #entries: Entry[];
  /** Index of #entries[0]. */
  #firstIndex: number;
  /** Term of the entry at firstIndex - 1 (the snapshot point, or a released entry). */
  #prevTerm: number;
  /** The latest snapshot with data (for followers behind firstIndex); undefined until compact(). */
  #snapshot: Snapshot | undefined;
  #snapshotMeta: SnapshotMeta;
  /** A snapshot received from the leader and restored, not yet handed out in a Ready. */
  pendingSnapshot: Snapshot | undefined;
  committed: number;
  applied: number;
  /** Entries up to here are durable (acknowledged through onPersisted). */
  stable: number;
  /** Entries up to here have been handed to the driver in some Ready. */
  handedOut: number;
  /** Committed entries up to here have been handed out for applying. */
  committedHandedOut: number;
  /** The lowest index rewritten (truncated or replaced by a snapshot) since the last hand-out; Infinity if none. */
  #rewriteFrom = Infinity;
  /**
   * Rewrites handed out in Readies not yet acknowledged, oldest first. One entry per Ready that carried a
   * rewrite, and rewrites come only with a change of leader, so the queue stays a few entries long.
   */
  #rewritesInFlight: { readySeq: number; from: number }[] = [];

  /** Committed entries may be handed out before they are stable (RaftConfig.applyUnstable). */
  readonly #applyUnstable: boolean;

  constructor(snapshot: SnapshotMeta, entries: Entry[], commit: number, applied: number, applyUnstable = false) {
    this.#applyUnstable = applyUnstable;
    this.#snapshotMeta = snapshot;
    this.#firstIndex = snapshot.index + 1;
    this.#prevTerm = snapshot.term;
    this.#entries = [];
    for (const e of entries) {
      assert(e.index === this.lastIndex + 1, `bootstrap entries not contiguous at ${e.index}`);
      assert(e.term >= this.lastTerm, `bootstrap entry terms decrease at ${e.index}`);
      this.#entries.push(e);
    }
    // A snapshot and whatever the application applied are committed by definition, even if the persisted
    // hard state predates them (a commit-only hard state change is written without fsync, etcd's rule, while
    // the state machine may persist its applied index on its own).
    const committed = Math.max(commit, snapshot.index, applied);
    assert(committed <= this.lastIndex, `commit ${committed} beyond the last index ${this.lastIndex}`);
    this.committed = committed;
    this.applied = Math.max(applied, snapshot.index);
    this.stable = this.lastIndex;
    this.handedOut = this.lastIndex;
    this.committedHandedOut = this.applied;
    this.pendingSnapshot = undefined;
    this.#snapshot = undefined;
  }

  get firstIndex(): number {
    return this.#firstIndex;
  }

  get lastIndex(): number {
    return this.#firstIndex + this.#entries.length - 1;
  }

  get lastTerm(): number {
    const n = this.#entries.length;
    return n === 0 ? this.#prevTerm : this.#entries[n - 1]!.term;
  }

  get snapshotMeta(): SnapshotMeta {
    return this.#snapshotMeta;
  }

  /** The latest snapshot with data, if the application provided one. */
  get snapshot(): Snapshot | undefined {
    return this.#snapshot;
  }

  /** The term of the entry at `index`, or undefined when it is released or beyond the end. */
  term(index: number): number | undefined {
    const i = index - this.#firstIndex;
    if (i === -1) return this.#prevTerm;
    if (i < -1 || i >= this.#entries.length) return undefined;
    return this.#entries[i]!.term;
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Raft §5.4.1: is a log ending at (index, term) at least as up to date as ours? */
  isUpToDate(index: number, term: number): boolean {
    const lastTerm = this.lastTerm;
    return term > lastTerm || (term === lastTerm && index >= this.lastIndex);
  }

  entry(index: number): Entry | undefined {
    return this.#entries[index - this.#firstIndex];
  }

  /**
   * Entries from `lo` on, at most `maxBytes` (but at least one entry). Undefined when `lo` is released
   * (the caller then needs the snapshot). The array is fresh; the entries are shared and never mutated.
   */
  slice(lo: number, maxBytes: number): Entry[] | undefined {
    if (lo < this.#firstIndex) return undefined;
    const start = lo - this.#firstIndex;
    const n = this.#entries.length;
    if (start >= n) return [];
    return this.#entries.slice(start, this.#boundedEnd(start, n, maxBytes));
  }

  /** Where a run of entries from position `start` (before `stop`) ends: at most `maxBytes`, but ≥ 1 entry. */
  #boundedEnd(start: number, stop: number, maxBytes: number): number {
    let end = start;
    let bytes = 0;
    while (end < stop) {
      bytes += entryBytes(this.#entries[end]!);
      if (bytes > maxBytes && end > start) break;
      end++;
    }
    return end;
  }

  /** Entries in [lo, hi] that are still held (used for rare scans such as pending conf changes). */
  between(lo: number, hi: number): Entry[] {
    const start = Math.max(lo, this.#firstIndex) - this.#firstIndex;
    const end = Math.min(hi, this.lastIndex) - this.#firstIndex + 1;
    return start < end ? this.#entries.slice(start, end) : [];
  }

  /** Leader append: entries continue the log exactly. */
  append(e: Entry): void {
    assert(e.index === this.lastIndex + 1, `append at ${e.index} after ${this.lastIndex}`);
    assert(e.term >= this.lastTerm, `append of term ${e.term} after term ${this.lastTerm}`);
    this.#entries.push(e);
  }

  /**
   * Follower append (MsgApp). Returns the index of the last new entry, or -1 when the log does not contain
   * (prevIndex, prevTerm). Entries already present are skipped; a conflicting suffix is truncated.
   */
  maybeAppend(prevIndex: number, prevTerm: number, commit: number, entries: Entry[]): number {
    if (!this.matchTerm(prevIndex, prevTerm)) return -1;
    const lastNew = prevIndex + entries.length;
    const conflict = this.#findConflict(entries);
    if (conflict !== 0) {
      assert(conflict > this.committed, `conflict at ${conflict} is at or below commit ${this.committed}`);
      this.#truncateAndAppend(entries, conflict - (prevIndex + 1));
    }
    this.commitTo(Math.min(commit, lastNew));
    return lastNew;
  }

  /** The first entry whose term differs from ours (or that is new), 0 when all are present. */
  #findConflict(entries: Entry[]): number {
    for (const e of entries) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  #truncateAndAppend(entries: Entry[], from: number): void {
    const first = entries[from]!.index;
    const last = this.lastIndex;
    if (first <= last) {
      assert(first > this.committed, `truncation at ${first} at or below commit ${this.committed}`);
      this.#entries.length = first - this.#firstIndex;
      this.handedOut = Math.min(this.handedOut, first - 1);
      this.stable = Math.min(this.stable, first - 1);
      this.#rewriteFrom = Math.min(this.#rewriteFrom, first);
    }
    assert(first === this.lastIndex + 1, `gap appending ${first} after ${this.lastIndex}`);
    for (let i = from; i < entries.length; i++) this.#entries.push(entries[i]!);
  }

  /**
   * Fast backtracking: the largest index ≤ `index` whose term is ≤ `term` (etcd-io/raft findConflictByTerm).
   * A leader probing with (index, term) can skip every entry of a term the other log cannot contain.
   */
  findConflictByTerm(index: number, term: number): TermHint {
    let i = Math.min(index, this.lastIndex);
    for (; i >= this.#firstIndex - 1; i--) {
      const t = this.term(i);
      if (t === undefined) break;
      if (t <= term) return { index: i, term: t };
    }
    return { index: i, term: 0 };
  }

  commitTo(index: number): boolean {
    if (index <= this.committed) return false;
    assert(index <= this.lastIndex, `commit ${index} beyond last index ${this.lastIndex}`);
    this.committed = index;
    return true;
  }

  /** A follower adopts the leader's snapshot: the log restarts after it. */
  restore(snapshot: Snapshot): void {
    const { index, term } = snapshot.meta;
    assert(index > this.committed, `restore of ${index} at or below commit ${this.committed}`);
    this.#entries = [];
    this.#firstIndex = index + 1;
    this.#prevTerm = term;
    this.#snapshot = snapshot;
    this.#snapshotMeta = snapshot.meta;
    this.pendingSnapshot = snapshot;
    this.committed = index;
    this.handedOut = index;
    // Not durable until acknowledged: keep stable below the snapshot point. The snapshot replaces the
    // whole log on disk, so no earlier Ready's ack counts any more.
    this.stable = Math.min(this.stable, index - 1);
    this.#rewriteFrom = 1;
    this.committedHandedOut = index;
  }

  /** The application's snapshot at `meta.index`; release entries up to `meta.index - keepEntries`. */
  compact(snapshot: Snapshot, keepEntries: number): void {
    const { index, term } = snapshot.meta;
    assert(index <= this.applied, `snapshot ${index} beyond applied ${this.applied}`);
    if (index < this.#snapshotMeta.index) return;
    assert(this.term(index) === term, `snapshot term ${term} does not match the log at ${index}`);
    this.#snapshot = snapshot;
    this.#snapshotMeta = snapshot.meta;
    // Applied entries may not be stable yet (applyUnstable): keep those, a later ack still names them.
    this.#releaseEntries(Math.min(index - keepEntries, this.stable));
  }

  /**
   * A witness drops entries up to `meta.index` without a snapshot of state (it has none): the log restarts
   * after that point, which `meta` records (src/raft/witness.ts).
   */
  releaseTo(meta: SnapshotMeta): void {
    const { index, term } = meta;
    assert(index <= this.applied && index <= this.stable, `release of ${index} beyond applied ${this.applied} or stable ${this.stable}`);
    assert(index >= this.#firstIndex && this.term(index) === term, `release of ${index}@${term} does not match the log`);
    this.#snapshotMeta = meta;
    this.#releaseEntries(index);
  }

  #releaseEntries(to: number): void {
    if (to < this.#firstIndex) return;
    this.#prevTerm = this.term(to)!;
    this.#entries.splice(0, to - this.#firstIndex + 1);
    this.#firstIndex = to + 1;
  }

  /** Entries not yet handed to any Ready, for Ready `readySeq`; marks them handed out. */
  takeUnhanded(readySeq: number): Entry[] {
    if (this.#rewriteFrom !== Infinity) {
      const last = this.#rewritesInFlight.at(-1);
      assert(last === undefined || last.readySeq < readySeq, `Ready ${readySeq} handed out twice`);
      this.#rewritesInFlight.push({ readySeq, from: this.#rewriteFrom });
      this.#rewriteFrom = Infinity;
    }
    if (this.handedOut >= this.lastIndex) return [];
    const out = this.#entries.slice(this.handedOut + 1 - this.#firstIndex);
    this.handedOut = this.lastIndex;
    return out;
  }

  hasUnhanded(): boolean {
    return this.handedOut < this.lastIndex;
  }

  /** The highest index that may be applied: committed, and durable here unless applyUnstable. */
  applicableIndex(): number {
    return this.#applyUnstable ? this.committed : Math.min(this.committed, this.stable);
  }

  hasNextCommitted(): boolean {
    return this.committedHandedOut < this.applicableIndex();
  }

  /** The next applicable entries (each handed out once, in order), at most `maxBytes` but ≥ 1. */
  takeCommitted(maxBytes: number): Entry[] {
    const hi = this.applicableIndex();
    if (this.committedHandedOut >= hi) return [];
    const lo = this.committedHandedOut + 1;
    assert(lo >= this.#firstIndex, `committed entry ${lo} already released`);
    const start = lo - this.#firstIndex;
    const end = this.#boundedEnd(start, hi - this.#firstIndex + 1, maxBytes);
    this.committedHandedOut = lo + (end - start) - 1;
    return this.#entries.slice(start, end);
  }

  /**
   * The driver made Ready `ack.readySeq` durable, the log up to (index, term) included. The log becomes
   * stable up to that index, but not past an index rewritten after that Ready (see the header).
   */
  stableTo(ack: PersistAck): boolean {
    const inFlight = this.#rewritesInFlight;
    while (inFlight.length > 0 && inFlight[0]!.readySeq <= ack.readySeq) inFlight.shift();
    let to = Math.min(ack.index, this.handedOut, this.#rewriteFrom - 1);
    for (const w of inFlight) to = Math.min(to, w.from - 1);
    if (to <= this.stable) return false;
    // Nothing at or below `to` changed since that Ready was handed out, so the log still holds what it wrote.
    assert(to < ack.index || this.term(to) === ack.term, `ack of ${ack.index}@${ack.term} does not match the log`);
    this.stable = to;
    return true;
  }

  appliedTo(index: number): void {
    if (index <= this.applied) return;
    assert(index <= this.committedHandedOut, `applied ${index} beyond handed-out ${this.committedHandedOut}`);
    this.applied = index;
  }
}
