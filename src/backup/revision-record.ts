/**
 * One revision of one key, the unit every importer speaks (an etcd snapshot's `key` bucket, kine's rows).
 * A stream of records is ordered by modRevision, then by sub-revision (the order of the changes inside one
 * revision); the sub-revision is the record's `sub` when it has one (an etcd snapshot's own, which a
 * compaction leaves with gaps: a txn's first put superseded and compacted away, its second kept as sub 1), and
 * otherwise its position among the records with its modRevision (kine's rows).
 */
import { assert } from '../base/assert.js';
import { decodeKeyValue, encodeKeyValue } from '../mvcc/kv-codec.js';
import { bytesToRevision, revisionToBytes } from '../mvcc/revision.js';

export interface RevisionRecord {
  key: Uint8Array;
  value: Uint8Array;
  createRevision: number;
  modRevision: number;
  version: number;
  lease: bigint;
  tombstone: boolean;
  /** The sub-revision as the source stored it; absent: the record's position within its revision. */
  sub?: number;
}

/** The `key` bucket entry (etcd's bytes) of a record with its sub-revision. */
export function recordToEntry(r: RevisionRecord, sub: number): [Uint8Array, Uint8Array] {
  assert(r.key.length > 0, 'a revision record needs a key');
  const key = revisionToBytes({ main: r.modRevision, sub }, r.tombstone);
  // etcd stores a deletion as KeyValue{Key} only.
  const value = r.tombstone
    ? encodeKeyValue({ key: r.key, createRevision: 0, modRevision: 0, version: 0, value: new Uint8Array(0), lease: 0n })
    : encodeKeyValue({ key: r.key, createRevision: r.createRevision, modRevision: r.modRevision, version: r.version, value: r.value, lease: r.lease });
  return [key, value];
}

/** A `key` bucket entry back to a record (for reading etcd snapshots). */
export function entryToRecord(key: Uint8Array, value: Uint8Array): RevisionRecord & { sub: number } {
  const { rev, tombstone } = bytesToRevision(key);
  const kv = decodeKeyValue(value);
  return {
    key: kv.key,
    value: kv.value,
    createRevision: tombstone ? 0 : kv.createRevision,
    modRevision: rev.main,
    version: tombstone ? 0 : kv.version,
    lease: tombstone ? 0n : kv.lease,
    tombstone,
    sub: rev.sub,
  };
}
