/**
 * Compaction, as etcd's kvstore_compaction.go + keyIndex.compact: for every key keep the latest revision at
 * or before the compact revision unless it is a tombstone, drop everything older. In memory this happens at
 * once (apply stays synchronous); the backend deletes of the dropped revisions run later in bounded chunks.
 */
import type { MvccCore } from './kv-core.js';
import type { HistoryEntry, KeyIndex } from './key-index.js';
import { revisionToBytes } from './revision.js';

/** etcd's meta keys for the scheduled and finished compaction revisions. */
export const scheduledCompactKey = new TextEncoder().encode('scheduledCompactRev');
export const finishedCompactKey = new TextEncoder().encode('finishedCompactRev');

/**
 * Compact the in-memory state at `rev` (already validated) and return the backend keys to delete.
 * Only history entries with main ≤ rev can be dropped, so only their keys are visited.
 */
export function compactInMemory(core: MvccCore, rev: number): Uint8Array[] {
  const history = core.history;
  let prefixEnd = 0;
  while (prefixEnd < history.length && history[prefixEnd]!.main <= rev) prefixEnd++;
  const visited = new Set<KeyIndex>();
  const dropped: Uint8Array[] = [];
  for (let i = 0; i < prefixEnd; i++) {
    const ki = core.tree.get(history[i]!.kv.key);
    if (ki === undefined || visited.has(ki)) continue;
    visited.add(ki);
    for (const e of ki.compact(rev)) dropped.push(revisionToBytes(e, e.tombstone));
    if (ki.isEmpty()) core.tree.delete(ki.key);
  }
  // Survivors of the prefix: the one entry ≤ rev each remaining key kept (its first entry).
  const kept: HistoryEntry[] = [];
  for (let i = 0; i < prefixEnd; i++) {
    const e = history[i]!;
    if (core.tree.get(e.kv.key)?.entries[0] === e) kept.push(e);
  }
  core.history = kept.concat(history.slice(prefixEnd));
  core.compactRev = rev;
  return dropped;
}

/** Split the deletes into batches of at most `chunkMax` keys. */
export function chunked<T>(items: T[], chunkMax: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += chunkMax) out.push(items.slice(i, i + chunkMax));
  return out;
}
