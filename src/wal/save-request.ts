/**
 * What a save carries, its encoded-size bound, and the checks a save must pass when it is handed in (before it
 * is queued): programmer errors are assertions, raised in the caller's stack.
 */
import { assert, assertSafeInteger } from '../base/index.js';
import type { Entry, HardState, SnapshotMeta } from '../raft/types.js';
import { assertEntries, entryOverheadBytesBound, recordBytesBound } from './record.js';

export interface SaveRequest {
  hardState?: HardState;
  entries?: readonly Entry[];
  /** Metadata of a snapshot whose data the caller made durable (use saveSnapshot to have the WAL store it). */
  snapshotMeta?: SnapshotMeta;
  /**
   * false: nothing here must be durable now: a hard state whose only change is the commit index (etcd's
   * mustSync = false; a lost commit index is learned again from the leader). It costs no write and no sync
   * of its own: it is written with the next batch, and the promise resolves once every earlier save is
   * durable, so acknowledgements keep their order. Ignored when entries or a snapshot are present.
   */
  sync?: boolean;
}

/** Upper bound of the bytes a save's records take in a batch (used for batch caps and rotation). */
export function bytesBound(r: SaveRequest): number {
  let n = 0;
  for (const e of r.entries ?? []) n += e.data.length + entryOverheadBytesBound;
  if (r.entries && r.entries.length > 0) n += recordBytesBound(16) * (1 + Math.ceil(n / (512 * 1024)));
  if (r.hardState) n += recordBytesBound(64);
  if (r.snapshotMeta) {
    const cs = r.snapshotMeta.confState;
    n += recordBytesBound(32 + 24 * (cs.voters.length + cs.learners.length + (cs.witnesses?.length ?? 0)));
  }
  return n;
}

interface Accepted {
  last: number;
  snapshotIndex: number;
  commit: number;
  term: number;
}

/** The log as handed to the WAL so far (not necessarily durable yet), to validate each next save against. */
export class SaveValidator {
  readonly #acc: Accepted;
  constructor(initial: Accepted) {
    this.#acc = { ...initial };
  }

  get snapshotIndex(): number {
    return this.#acc.snapshotIndex;
  }

  accept(r: SaveRequest): void {
    const acc = this.#acc;
    if (r.snapshotMeta) {
      assertSafeInteger(r.snapshotMeta.index, 'snapshot index');
      assert(r.snapshotMeta.index >= acc.snapshotIndex, 'snapshot index went back');
      acc.snapshotIndex = r.snapshotMeta.index;
      acc.last = Math.max(acc.last, r.snapshotMeta.index);
    }
    const entries = r.entries ?? [];
    if (entries.length > 0) {
      assertEntries(entries);
      const first = entries[0]!.index;
      assert(first > acc.snapshotIndex, `entries at ${first} are covered by the snapshot at ${acc.snapshotIndex}`);
      assert(first <= acc.last + 1, `entries at ${first} leave a gap after ${acc.last}`);
      assert(first > acc.commit, `entries at ${first} would overwrite committed entries (commit ${acc.commit})`);
      acc.last = entries[entries.length - 1]!.index;
    }
    if (r.hardState) {
      assertSafeInteger(r.hardState.term, 'term');
      assertSafeInteger(r.hardState.commit, 'commit');
      assert(r.hardState.term >= acc.term, 'term went back');
      assert(r.hardState.commit >= acc.commit, 'commit went back');
      acc.term = r.hardState.term;
      acc.commit = r.hardState.commit;
    }
  }
}
