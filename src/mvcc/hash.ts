/**
 * HashKV with etcd's meaning (server/mvcc/hash.go, kvstore.go hashByRev): CRC-32C over the bucket name
 * "key" and then, in revision order, every stored (revision key, KeyValue bytes) with main ≤ rev, skipping
 * entries at or below the compact revision unless compaction at rev would keep them (when anything is kept).
 * Because we store etcd's exact bytes, equal histories give etcd's hash.
 */
import { decodeKeyValue } from './kv-codec.js';
import type { Backend } from './backend.js';
import type { MvccCore } from './kv-core.js';
import { Crc32c } from './kv-codec.js';
import { bytesToRevision } from './revision.js';
import { codeToBytes, firstCodeOf, revCode } from './rev-code.js';
import { MvccError } from './types.js';

export interface KvHash {
  hash: number;
  compactRevision: number;
  /** The revision the hash covers. */
  hashRevision: number;
}

/** What one hash covers, fixed when it starts. */
export interface HashBounds {
  rev: number;
  compactRev: number;
  /** etcd's keep(rev) is, per key, its live entry at rev; only its emptiness and membership matter here. */
  keepNonEmpty: boolean;
  /** The 'key' bucket key every hashed revision sorts below. */
  end: Uint8Array;
}

/** Checks the revision (etcd's errors) and fixes the bounds of a hash at it (0: the current revision). */
export function hashBounds(core: MvccCore, revision: number): HashBounds {
  const compactRev = core.compactRev;
  if (revision > 0 && revision < compactRev) throw new MvccError('compacted');
  if (revision > 0 && revision > core.currentRev) throw new MvccError('futureRev');
  const rev = revision === 0 ? core.currentRev : revision;
  let keepNonEmpty = false;
  for (const ki of core.tree.all()) {
    if (ki.get(rev) !== undefined) {
      keepNonEmpty = true;
      break;
    }
  }
  return { rev, compactRev, keepNonEmpty, end: codeToBytes(firstCodeOf(rev + 1)) };
}

/**
 * The hash over stored entries (the 'key' bucket's keys and values, in order, below `bounds.end`). Entries
 * compaction already dropped from the index but not yet from the backend are skipped, as are those at or
 * below the compact revision that compaction at rev would not keep.
 */
export async function hashEntries(core: MvccCore, bounds: HashBounds, entries: AsyncIterable<[Uint8Array, Uint8Array]>): Promise<KvHash> {
  const { rev, compactRev, keepNonEmpty } = bounds;
  const crc = new Crc32c().update(new TextEncoder().encode('key'));
  for await (const [key, raw] of entries) {
    const { rev: r, tombstone } = bytesToRevision(key);
    if (r.main > rev) break;
    if (r.main <= compactRev) {
      const code = revCode(r.main, r.sub, tombstone);
      const ki = core.tree.get(decodeKeyValue(raw).key);
      if (ki === undefined || !ki.has(code)) continue;
      if (keepNonEmpty && ki.get(rev) !== code) continue;
    }
    crc.update(key);
    crc.update(raw);
  }
  return { hash: crc.sum(), compactRevision: compactRev, hashRevision: rev };
}

/**
 * Backend entries merged with unflushed ones, by revision: an unflushed revision the backend already has
 * (a flush that landed after the view was taken is not in it; one that landed before is in both) once.
 */
export async function* withUnflushed(stored: AsyncIterable<[Uint8Array, Uint8Array]>, unflushed: [number, Uint8Array][]): AsyncIterable<[Uint8Array, Uint8Array]> {
  let next = 0;
  for await (const entry of stored) {
    const { rev, tombstone } = bytesToRevision(entry[0]);
    const code = revCode(rev.main, rev.sub, tombstone);
    while (next < unflushed.length && unflushed[next]![0] < code) {
      const [c, raw] = unflushed[next++]!;
      yield [codeToBytes(c), raw];
    }
    if (next < unflushed.length && unflushed[next]![0] === code) next++;
    yield entry;
  }
  for (; next < unflushed.length; next++) yield [codeToBytes(unflushed[next]![0]), unflushed[next]![1]];
}

/**
 * etcd's HashKV at `revision` (0: the current one). Streamed from a consistent backend view merged with the
 * writes not yet flushed, so hashing a large store never blocks apply or reads (the event loop turns between
 * backend batches). A compaction that lands while it runs changes what the hash covers: it starts over then.
 */
export async function hashStore(core: MvccCore, backend: Backend, revision: number): Promise<KvHash> {
  for (;;) {
    const bounds = hashBounds(core, revision);
    const view = backend.view();
    const unflushed = core.values.unflushed();
    try {
      const h = await hashEntries(core, bounds, withUnflushed(view.scan('key', { lt: bounds.end }), unflushed));
      if (core.compactRev === bounds.compactRev) return h;
    } finally {
      await view.close();
    }
  }
}
