/** Loading a saved key index (index-checkpoint.ts) into an empty store's core, before the tail after its cut is scanned. */
import { IndexCheckpointError, IndexCheckpointReader, versionUnknown } from './index-checkpoint.js';
import { KeyIndex } from './key-index.js';
import type { Backend } from './backend.js';
import type { MvccCore } from './kv-core.js';
import { decodeKeyValueMeta } from './kv-codec.js';
import { codeIsTombstone, codeToBytes } from './rev-code.js';

/** What the backend holds, against which a checkpoint is judged. */
export interface BackendMark {
  consistentIndex: number;
  term: number;
  /** The compaction the backend has scheduled (-1: none). */
  compactRev: number;
}

/**
 * Reads a checkpoint into `core` (empty); returns its cut, the last revision code it covers: the caller
 * scans the backend after it. Refused (IndexCheckpointError, nothing of it kept by the caller) when it was
 * cut at a consistent index the backend has not reached (a crash before the backend caught up: revisions it
 * names may be missing), or when the backend's compaction is not the one it was cut at (a compaction passed
 * it: revisions it names were deleted, and the tail scan would not drop them).
 */
export async function loadIndexCheckpoint(core: MvccCore, source: AsyncIterable<Uint8Array>, backend: Backend, at: BackendMark): Promise<number> {
  const reader = new IndexCheckpointReader(source);
  const header = await reader.header();
  if (header.consistentIndex > at.consistentIndex || header.term > at.term) {
    throw new IndexCheckpointError(`ahead of the backend: cut at index ${header.consistentIndex} (term ${header.term}), the backend is at ${at.consistentIndex} (term ${at.term})`);
  }
  if (header.compactRev !== at.compactRev) {
    throw new IndexCheckpointError(`cut at compaction ${header.compactRev}, the backend's compaction is ${at.compactRev}`);
  }
  let codes = new Float64Array(Math.max(1024, header.keys));
  let n = 0;
  const unknown: KeyIndex[] = [];
  for await (const e of reader.entries()) {
    const ki = KeyIndex.restored(e.key, e.revs, e.createRevision, e.version, e.lease);
    if (e.version === versionUnknown) unknown.push(ki);
    core.tree.appendLast(ki);
    if (n + e.revs.length > codes.length) {
      const grown = new Float64Array(Math.max(codes.length * 2, n + e.revs.length));
      grown.set(codes.subarray(0, n));
      codes = grown;
    }
    for (const code of e.revs) codes[n++] = code;
  }
  // Keys written after the cut while it was taken: their metadata at the cut is that of their last put.
  for (const ki of unknown) {
    const last = ki.revisionAt(ki.revisionCount - 1);
    if (codeIsTombstone(last)) {
      ki.createRevision = 0;
      ki.version = 0;
      ki.lease = 0n;
      continue;
    }
    const value = await backend.get('key', codeToBytes(last));
    if (value === undefined) throw new IndexCheckpointError(`index checkpoint names revision ${last}, which the backend does not hold`);
    const meta = decodeKeyValueMeta(value);
    ki.createRevision = meta.createRevision;
    ki.version = meta.version;
    ki.lease = meta.lease;
  }
  const sorted = codes.subarray(0, n).sort();
  if (n > 0 && sorted[n - 1]! > header.lastCode) throw new IndexCheckpointError('index checkpoint: a revision past its cut');
  core.log.loadSorted(n === codes.length ? sorted : sorted.slice());
  core.currentRev = header.currentRev;
  core.compactRev = header.compactRev;
  core.lastCode = header.lastCode;
  return header.lastCode;
}
