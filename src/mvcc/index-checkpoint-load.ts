/** Loading a key index saved at a clean stop (index-checkpoint.ts) into an empty store's core. */
import { IndexCheckpointError, IndexCheckpointReader } from './index-checkpoint.js';
import { KeyIndex } from './key-index.js';
import type { MvccCore } from './kv-core.js';

/** Reads a checkpoint into `core` (empty); returns the last revision code it covers. */
export async function loadIndexCheckpoint(core: MvccCore, source: AsyncIterable<Uint8Array>, consistentIndex: number, term: number): Promise<number> {
  const reader = new IndexCheckpointReader(source);
  const header = await reader.header();
  if (header.consistentIndex !== consistentIndex || header.term !== term) {
    throw new IndexCheckpointError(`stale: written at index ${header.consistentIndex} (term ${header.term}), the backend is at ${consistentIndex} (term ${term})`);
  }
  let codes = new Float64Array(Math.max(1024, header.keys));
  let n = 0;
  for await (const e of reader.entries()) {
    core.tree.appendLast(KeyIndex.restored(e.key, e.revs, e.createRevision, e.version, e.lease));
    if (n + e.revs.length > codes.length) {
      const grown = new Float64Array(Math.max(codes.length * 2, n + e.revs.length));
      grown.set(codes.subarray(0, n));
      codes = grown;
    }
    for (const code of e.revs) codes[n++] = code;
  }
  const sorted = codes.subarray(0, n).sort();
  if (n > 0 && sorted[n - 1] !== header.lastCode) throw new IndexCheckpointError('index checkpoint: last revision does not match its header');
  core.log.loadSorted(n === codes.length ? sorted : sorted.slice());
  core.currentRev = header.currentRev;
  core.compactRev = header.compactRev;
  core.lastCode = header.lastCode;
  return header.lastCode;
}
