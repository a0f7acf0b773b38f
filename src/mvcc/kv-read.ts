/**
 * Range, with etcd 3.5's semantics (applierV3backend.Range + storeTxnRead.rangeKeys): revision checks,
 * min/max filters applied after the index lookup, `count` = keys in the whole range (filters aside),
 * sorting (ascending by default when the target is not the key), `limit` with `more`, keys_only/count_only.
 */
import { compareBytes } from '../base/bytes.js';
import type { MvccCore } from './kv-core.js';
import { MvccError, SortOrder, SortTarget, type KeyValue, type RangeRequest, type RangeResponse } from './types.js';

/** etcd's mkGteRange + nil check: "" is a single key, "\0" is every key ≥ key (returned as an empty end). */
export function rangeEndOf(rangeEnd: Uint8Array): Uint8Array | undefined {
  if (rangeEnd.length === 0) return undefined;
  if (rangeEnd.length === 1 && rangeEnd[0] === 0) return new Uint8Array(0);
  return rangeEnd;
}

/** etcd's rangeKeys revision checks: a future revision, then a compacted one (rev < compactRev). */
export function checkReadRevision(core: MvccCore, revision: number, curRev: number): number {
  if (revision > curRev) throw new MvccError('futureRev');
  const rev = revision <= 0 ? curRev : revision;
  if (rev < core.compactRev) throw new MvccError('compacted');
  return rev;
}

type Comparator = (a: KeyValue, b: KeyValue) => number;

function comparatorFor(target: SortTarget): Comparator {
  switch (target) {
    case SortTarget.Key: return (a, b) => compareBytes(a.key, b.key);
    case SortTarget.Version: return (a, b) => a.version - b.version;
    case SortTarget.Create: return (a, b) => a.createRevision - b.createRevision;
    case SortTarget.Mod: return (a, b) => a.modRevision - b.modRevision;
    case SortTarget.Value: return (a, b) => compareBytes(a.value, b.value);
  }
}

function needsFullScan(req: RangeRequest): boolean {
  return req.sortOrder !== SortOrder.None || req.minModRevision !== 0 || req.maxModRevision !== 0 ||
    req.minCreateRevision !== 0 || req.maxCreateRevision !== 0;
}

function filterKvs(req: RangeRequest, kvs: KeyValue[]): KeyValue[] {
  return kvs.filter((kv) =>
    !(req.maxModRevision !== 0 && kv.modRevision > req.maxModRevision) &&
    !(req.minModRevision !== 0 && kv.modRevision < req.minModRevision) &&
    !(req.maxCreateRevision !== 0 && kv.createRevision > req.maxCreateRevision) &&
    !(req.minCreateRevision !== 0 && kv.createRevision < req.minCreateRevision));
}

function sortKvs(req: RangeRequest, kvs: KeyValue[]): void {
  let order = req.sortOrder;
  // The index returns keys ascending; etcd sorts ascending by default only for a target other than the key.
  if (req.sortTarget !== SortTarget.Key && order === SortOrder.None) order = SortOrder.Ascend;
  if (order === SortOrder.None) return;
  const cmp = comparatorFor(req.sortTarget);
  // A stable sort: equal elements keep key order in both directions, as Go's sort.Sort(sort.Reverse(..)) does
  // for the small inputs where it is an insertion sort.
  if (order === SortOrder.Ascend) kvs.sort(cmp);
  else kvs.sort((a, b) => cmp(b, a));
}

/**
 * Serve a RangeRequest at `curRev` (the store revision, or a write txn's read revision). Returned KeyValues
 * may be the store's cached objects: callers must not mutate them. Values are read only for the keys
 * returned (count_only reads none; keys_only reads none for current revisions).
 */
export function rangeRequest(core: MvccCore, req: RangeRequest, curRev: number): RangeResponse {
  const fullScan = needsFullScan(req);
  let fetchLimit = fullScan ? 0 : req.limit;
  if (fetchLimit > 0) fetchLimit += 1; // one extra to learn `more`
  const rev = checkReadRevision(core, req.revision, curRev);
  const { hits, total } = core.rangeEntries(req.key, rangeEndOf(req.rangeEnd), rev, req.countOnly ? 1 : fetchLimit);
  if (req.countOnly) return { kvs: [], more: false, count: total, revision: curRev };
  // Sorting or filtering on the value needs it; otherwise keys_only answers from the index.
  const needValues = !req.keysOnly || req.sortTarget === SortTarget.Value;
  let kvs = hits.map((h) => (needValues ? core.kvOf(h) : core.metaOf(h)));
  if (fullScan) kvs = filterKvs(req, kvs);
  sortKvs(req, kvs);
  let more = false;
  if (req.limit > 0 && kvs.length > req.limit) {
    kvs = kvs.slice(0, req.limit);
    more = true;
  }
  if (req.keysOnly && needValues) kvs = kvs.map((kv) => ({ ...kv, value: new Uint8Array(0) }));
  return { kvs, more, count: total, revision: curRev };
}
