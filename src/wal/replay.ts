/**
 * Replays scanned segments into the state a node restarts from. Pure: no I/O.
 *
 * Semantics, record by record, in log order:
 * - HardState: the last one wins (each is written with, and after, the entries it refers to).
 * - SnapshotMeta (S, T): if the log holds entry S with term T, entries up to S are dropped and the rest kept
 *   (a compaction); otherwise the whole log is discarded and restarts after S (a snapshot installed from the
 *   leader). This is how Raft itself restores a snapshot.
 * - Entries starting at f: the suffix from f is replaced (a new leader overwrote an uncommitted tail).
 *   Before any entries were seen, f may be beyond the log's end: the segments holding the earlier entries were
 *   released, which is only allowed once a snapshot covers them; the final check below verifies that.
 */
import type { Entry, HardState, SnapshotMeta } from '../raft/types.js';
import { WalCorruptError } from './errors.js';
import { decodeEntries, decodeHardState, decodeSnapshotMeta, RecordType } from './record.js';
import type { ScannedRecord, ScannedSegment } from './segment.js';

export interface ReplayResult {
  hardState: HardState;
  snapshot: SnapshotMeta;
  /** Entries after snapshot.index, contiguous. */
  entries: Entry[];
  /** Per segment: the highest entry index written in it (0 when none). */
  segmentMaxIndex: number[];
}

export function emptySnapshotMeta(): SnapshotMeta {
  return { index: 0, term: 0, confState: { voters: [], learners: [] } };
}

class LogReplay {
  hardState: HardState = { term: 0, vote: 0n, commit: 0 };
  snapshot: SnapshotMeta = emptySnapshotMeta();
  entries: Entry[] = [];
  /** Index of entries[0] (or where the next entry goes when empty). */
  first = 1;
  sawEntries = false;

  get last(): number {
    return this.first + this.entries.length - 1;
  }

  applySnapshot(m: SnapshotMeta): string | undefined {
    if (m.index < this.snapshot.index) return `snapshot index went back from ${this.snapshot.index} to ${m.index}`;
    const at = m.index - this.first;
    if (at >= 0 && m.index <= this.last && this.entries[at]!.term === m.term) {
      this.entries = this.entries.slice(at + 1);
      this.first = m.index + 1;
    } else if (m.index >= this.first) {
      this.entries = [];
      this.first = m.index + 1;
    }
    this.snapshot = m;
    return undefined;
  }

  applyEntries(es: Entry[]): string | undefined {
    const f = es[0]!.index;
    if (f <= this.snapshot.index) return `entries at ${f} are covered by the snapshot at ${this.snapshot.index}`;
    if (f > this.last + 1 && this.sawEntries) return `entries jump from ${this.last} to ${f}`;
    if (f > this.last + 1 || f < this.first) {
      this.entries = [];
      this.first = f;
    } else {
      this.entries.length = f - this.first;
    }
    for (const e of es) this.entries.push(e);
    this.sawEntries = true;
    return undefined;
  }
}

function applyRecord(log: LogReplay, rec: ScannedRecord): number {
  switch (rec.type) {
    case RecordType.HardState:
      log.hardState = decodeHardState(rec.payload);
      return 0;
    case RecordType.SnapshotMeta: {
      const problem = log.applySnapshot(decodeSnapshotMeta(rec.payload));
      if (problem) throw new Error(problem);
      return 0;
    }
    case RecordType.Entries: {
      const es = decodeEntries(rec.payload);
      const problem = log.applyEntries(es);
      if (problem) throw new Error(problem);
      return es[es.length - 1]!.index;
    }
  }
}

/** Replays segments one at a time, so only one segment's bytes are in memory during recovery. */
export class Replayer {
  readonly #log = new LogReplay();
  readonly #segmentMaxIndex: number[] = [];
  #firstFile: string | undefined;

  /** Applies one segment's records; returns the highest entry index written in it (0 when none). */
  add(seg: ScannedSegment): number {
    this.#firstFile ??= seg.file;
    let maxIndex = 0;
    for (const rec of seg.records) {
      try {
        maxIndex = Math.max(maxIndex, applyRecord(this.#log, rec));
      } catch (err) {
        if (err instanceof WalCorruptError) throw err;
        throw new WalCorruptError(seg.file, rec.offset, (err as Error).message);
      }
    }
    this.#segmentMaxIndex.push(maxIndex);
    return maxIndex;
  }

  finish(): ReplayResult {
    const log = this.#log;
    if (log.entries.length > 0 && log.first > log.snapshot.index + 1) {
      const missing = `entries ${log.snapshot.index + 1}..${log.first - 1} are missing (no snapshot covers them)`;
      throw new WalCorruptError(this.#firstFile ?? '(none)', 0, missing);
    }
    return { hardState: log.hardState, snapshot: log.snapshot, entries: log.entries, segmentMaxIndex: this.#segmentMaxIndex };
  }
}

export function replay(segments: readonly ScannedSegment[]): ReplayResult {
  const r = new Replayer();
  for (const seg of segments) r.add(seg);
  return r.finish();
}
