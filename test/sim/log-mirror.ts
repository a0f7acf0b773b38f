/**
 * A node's Raft log as its driver sees it: a snapshot point (index, term) followed by contiguous entries.
 * The simulator keeps two per node: what has been handed to storage (the core's in-memory log) and what is
 * durable on the simulated disk. Both reject gaps; a truncation is reported so the checker can judge it.
 */
import type { Entry } from '../../src/raft/types.js';

export class SimViolation extends Error {
  override name = 'SimViolation';
}

export class LogMirror {
  snapIndex = 0;
  snapTerm = 0;
  entries: Entry[] = [];

  lastIndex(): number {
    return this.snapIndex + this.entries.length;
  }

  lastTerm(): number {
    return this.entries.length > 0 ? this.entries[this.entries.length - 1]!.term : this.snapTerm;
  }

  /** The term at `index`, or undefined if compacted away (below the snapshot) or past the end. */
  term(index: number): number | undefined {
    if (index === this.snapIndex) return this.snapTerm;
    return this.entry(index)?.term;
  }

  entry(index: number): Entry | undefined {
    if (index <= this.snapIndex) return undefined;
    return this.entries[index - this.snapIndex - 1];
  }

  /**
   * Append entries that may overwrite a suffix. Returns the first index that replaced an existing entry
   * (a truncation), or undefined if the append only extended the log.
   */
  append(ents: readonly Entry[]): number | undefined {
    const first = ents[0];
    if (first === undefined) return undefined;
    if (first.index <= this.snapIndex) {
      throw new SimViolation(`append at ${first.index} inside the snapshot (snapshot index ${this.snapIndex})`);
    }
    if (first.index > this.lastIndex() + 1) {
      throw new SimViolation(`append at ${first.index} leaves a gap after last index ${this.lastIndex()}`);
    }
    let truncatedFrom: number | undefined;
    if (first.index <= this.lastIndex()) {
      truncatedFrom = first.index;
      this.entries.length = first.index - this.snapIndex - 1;
    }
    for (let i = 0; i < ents.length; i++) {
      const e = ents[i]!;
      if (e.index !== first.index + i) throw new SimViolation(`non-contiguous entries in one append at ${e.index}`);
      this.entries.push(e);
    }
    return truncatedFrom;
  }

  /** Replace the whole log by a snapshot point (a snapshot from the leader). */
  restore(index: number, term: number): void {
    this.snapIndex = index;
    this.snapTerm = term;
    this.entries = [];
  }

  /** Drop entries up to `index` (an application snapshot at `index` made them redundant). */
  compact(index: number): void {
    if (index <= this.snapIndex) return;
    const term = this.term(index);
    if (term === undefined) throw new SimViolation(`compact at ${index} past last index ${this.lastIndex()}`);
    this.entries = this.entries.slice(index - this.snapIndex);
    this.snapIndex = index;
    this.snapTerm = term;
  }

  clone(): LogMirror {
    const c = new LogMirror();
    c.snapIndex = this.snapIndex;
    c.snapTerm = this.snapTerm;
    c.entries = this.entries.slice();
    return c;
  }
}
