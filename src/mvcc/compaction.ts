/**
 * Compaction, as etcd's kvstore_compaction.go + treeIndex.Compact: for every key keep the latest revision at
 * or before the compact revision unless it is a tombstone, drop everything older. The index changes at once
 * (apply stays synchronous); the backend deletes of the dropped revisions run later in bounded chunks.
 */
import type { MvccCore } from './kv-core.js';
import { codeMain } from './rev-code.js';
import type { Backend } from './backend.js';
import { bytesToRevision } from './revision.js';

/** etcd's meta keys for the scheduled and finished compaction revisions. */
export const scheduledCompactKey = new TextEncoder().encode('scheduledCompactRev');
export const finishedCompactKey = new TextEncoder().encode('finishedCompactRev');

/**
 * Compact the in-memory index at `rev` (already validated) and return the dropped revision codes, ascending
 * (for the backend deletes). Walks every key, as etcd's treeIndex does: the index alone knows which
 * revisions a key keeps, and no value is read.
 */
export function compactInMemory(core: MvccCore, rev: number): number[] {
  const dropped: number[] = [];
  const emptied: string[] = [];
  for (const ki of core.tree.all()) {
    for (const code of ki.compact(rev)) dropped.push(code);
    if (ki.isEmpty()) emptied.push(ki.text);
  }
  for (const key of emptied) core.tree.delete(key);
  dropped.sort((a, b) => a - b);
  let next = 0;
  core.log.retain((code) => {
    if (codeMain(code) > rev) return true;
    while (next < dropped.length && dropped[next]! < code) next++;
    return !(next < dropped.length && dropped[next] === code);
  });
  for (const code of dropped) core.values.dropped(code);
  core.compactRev = rev;
  return dropped;
}

/** Split the deletes into batches of at most `chunkMax` keys. */
export function chunked<T>(items: T[], chunkMax: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += chunkMax) out.push(items.slice(i, i + chunkMax));
  return out;
}

/** The compaction a backend has scheduled (the latest Compact applied to it), -1 when none. */
export async function compactedRevisionOf(backend: Backend): Promise<number> {
  const scheduled = await backend.get('meta', scheduledCompactKey);
  return scheduled === undefined ? -1 : bytesToRevision(scheduled).rev.main;
}
