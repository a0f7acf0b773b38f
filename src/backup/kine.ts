/**
 * Reading k3s's old SQLite datastore (kine's `state.db`) as etcd revisions, for `etcetera migrate --from-kine`.
 *
 * kine keeps one table, `kine(id, name, created, deleted, create_revision, prev_revision, lease, value,
 * old_value)`, as an append-only log: every row is one change and its `id` is the revision (kine answers
 * clients with it as mod_revision). Read from k3s-io/kine pkg/logstructured and pkg/drivers/generic:
 *   - `created = 1`: the key's creation; its create revision is the row id (the column holds 0).
 *   - `deleted = 1`: a deletion; the row repeats the deleted value and create revision.
 *   - otherwise an update; `create_revision` is the key's, `prev_revision` the row it replaced.
 *   - `name = 'compact_rev_key'`: kine's bookkeeping row; `prev_revision` is the compacted revision.
 *   - `name` starting `gap-`: a fill row kine writes for an id a failed insert skipped (`deleted = 1`).
 *   - `lease` is the TTL in seconds the client asked for: kine's lease ids are their TTL.
 * Compaction deletes superseded rows and deletion rows up to the compact revision, so the history starts
 * there and a key's creation may be gone: its version is then counted from the first row still present.
 *
 * Revisions are kept as they are (id = mod_revision), so every revision a client saw from kine means the
 * same here and the store continues above the source's current revision (kube-apiserver watch caches
 * resume from revisions they hold; revisions must never go backwards).
 */
import { assert } from '../base/assert.js';
import type { RevisionRecord } from './revision-record.js';

export interface KineRow {
  id: number;
  name: string;
  created: number;
  deleted: number;
  createRevision: number;
  prevRevision: number;
  lease: number;
  value: Uint8Array | null;
}

export const kineCompactRevKey = 'compact_rev_key';
export const kineGapPrefix = 'gap-';

/**
 * Maps kine rows, fed in id order, to revision records; remembers what the rows say about revisions and
 * leases. Pure: the SQLite reading is the caller's.
 */
export class KineMapper {
  readonly #encoder = new TextEncoder();
  readonly #versions = new Map<string, number>();
  readonly #liveLeases = new Map<string, bigint>();
  #lastId = 0;
  #compactRevision = 0;
  #records = 0;

  /** The record of one row, or undefined for kine's bookkeeping and fill rows. */
  map(row: KineRow): RevisionRecord | undefined {
    assert(Number.isSafeInteger(row.id) && row.id > this.#lastId, `kine rows out of order: ${row.id} after ${this.#lastId}`);
    this.#lastId = row.id;
    if (row.name === kineCompactRevKey) {
      this.#compactRevision = Math.max(this.#compactRevision, row.prevRevision);
      return undefined;
    }
    if (row.name.startsWith(kineGapPrefix)) return undefined;
    const deleted = row.deleted !== 0;
    const created = row.created !== 0;
    const version = deleted ? 0 : created ? 1 : (this.#versions.get(row.name) ?? 0) + 1;
    const createRevision = created ? row.id : row.createRevision > 0 ? row.createRevision : row.id;
    const lease = deleted ? 0n : BigInt(row.lease);
    if (deleted) this.#versions.delete(row.name);
    else this.#versions.set(row.name, version);
    if (lease > 0n) this.#liveLeases.set(row.name, lease);
    else this.#liveLeases.delete(row.name);
    this.#records++;
    return {
      key: this.#encoder.encode(row.name),
      value: deleted ? new Uint8Array(0) : (row.value ?? new Uint8Array(0)),
      createRevision: deleted ? 0 : createRevision,
      modRevision: row.id,
      version,
      lease,
      tombstone: deleted,
    };
  }

  /** The source's current revision so far: the largest id of any row (bookkeeping and fill rows included). */
  get currentRevision(): number {
    return this.#lastId;
  }

  /** kine's compacted revision, from its compact_rev_key row (0 when never compacted). */
  get compactRevision(): number {
    return this.#compactRevision;
  }

  get records(): number {
    return this.#records;
  }

  /** The leases live keys refer to: kine's lease id is the TTL in seconds the client asked for. */
  leases(): Array<{ id: bigint; ttlSeconds: number; remainingTtlSeconds: number }> {
    const ids = [...new Set(this.#liveLeases.values())].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return ids.map((id) => ({ id, ttlSeconds: Number(id), remainingTtlSeconds: 0 }));
  }
}
