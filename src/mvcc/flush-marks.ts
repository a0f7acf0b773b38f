/**
 * Where each applied index's effects end in the write buffer, so a flush writes only what the durable Raft
 * log can replay past (entries may be applied before the log holds them: RaftConfig.applyUnstable).
 */

/**
 * Where the buffered effects of the entries up to any index in [from, index] end (the entries after `from`
 * buffered nothing): the first `ops` buffered ops, the first `jobs` pending compactions, revision codes up to
 * `lastCode`.
 */
export interface FlushMark {
  from: number;
  fromTerm: number;
  index: number;
  term: number;
  ops: number;
  jobs: number;
  lastCode: number;
}

export class FlushMarks {
  /** Marks of applied indexes not flushed yet, oldest first; the current index's mark is implicit. */
  #marks: FlushMark[] = [];
  /** Flushes write no effect of an entry above this (Infinity: a store no log drives, as in tools and tests). */
  durableIndex = Infinity;

  /** Everything buffered so far (`mark`) is the effect of entries up to the previous index. */
  markApplied(mark: FlushMark): void {
    const last = this.#marks.at(-1);
    // An entry that buffered nothing extends the last mark instead of adding one, within one term: a mark
    // spanning a term change could be flushed only up to its start (the term at the durable index inside it
    // is unknown), and a snapshot due there found the backend behind it (found by the production-node
    // simulator: 'backend durable to 104, behind the snapshot at 105' after a leader change).
    if (last !== undefined && last.ops === mark.ops && last.jobs === mark.jobs && last.term === mark.term) {
      last.index = mark.index;
      last.term = mark.term;
    } else {
      this.#marks.push(mark);
    }
  }

  /**
   * What a flush may write: the newest mark reaching the durable index, as of the highest index of it at or
   * below the durable index whose term is known, and how many of the marks it covers. `current()` is the
   * mark of the index being applied.
   */
  flushable(consistentIndex: number, current: () => FlushMark): { mark: FlushMark; covered: number } | undefined {
    const durable = this.durableIndex;
    if (consistentIndex <= durable) return { mark: current(), covered: this.#marks.length };
    let covered = 0;
    while (covered < this.#marks.length && this.#marks[covered]!.from <= durable) covered++;
    if (covered === 0) return undefined;
    const m = this.#marks[covered - 1]!;
    if (m.index <= durable) return { mark: m, covered };
    // Terms never decrease along the log: equal at both ends, the durable index has that term as well.
    const at = m.term === m.fromTerm ? { index: durable, term: m.term } : { index: m.from, term: m.fromTerm };
    // The mark stays, for the entries above: from now on it starts where this flush ends.
    const part = { ...m, ...at };
    m.from = at.index;
    m.fromTerm = at.term;
    return { mark: part, covered: covered - 1 };
  }

  /** A flush took `mark`'s ops and jobs and the first `covered` marks: the rest now count from there. */
  flushed(mark: FlushMark, covered: number): void {
    this.#marks.splice(0, covered);
    for (const later of this.#marks) {
      later.ops -= mark.ops;
      later.jobs -= mark.jobs;
    }
  }
}
