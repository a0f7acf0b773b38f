/**
 * `<data-dir>/member/index.ckpt`: the key index (src/mvcc/index-checkpoint.ts), so a start does not scan every
 * value in the backend. Written whole or not at all (wal/atomic-file.ts): at a clean stop, after the last
 * flush, and while the member runs by the keeper (main/index-checkpoint-keeper.ts). Read once at the next
 * start and then removed; the store refuses one cut past the backend or passed by a compaction.
 */
import { createReadStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { KvStore } from '../mvcc/kv-store.js';
import type { Logger } from '../config/log.js';
import { writeFileAtomically } from '../wal/atomic-file.js';
import { NodeFsPort } from '../wal/fs-port.js';

const nodeFs = new NodeFsPort();
const fileName = 'index.ckpt';

export function indexCheckpointPath(memberDir: string): string {
  return join(memberDir, fileName);
}

/** The checkpoint's bytes, streamed, or undefined when there is none. */
export async function openIndexCheckpoint(memberDir: string): Promise<AsyncIterable<Uint8Array> | undefined> {
  const path = indexCheckpointPath(memberDir);
  try {
    await stat(path);
  } catch {
    return undefined;
  }
  return createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Uint8Array>;
}

export async function removeIndexCheckpoint(memberDir: string): Promise<void> {
  await rm(indexCheckpointPath(memberDir), { force: true });
}

/** Saves the index of a store that has stopped applying and flushed everything. Never fatal: it is a cache. */
export async function saveIndexCheckpoint(memberDir: string, store: KvStore, log: Logger): Promise<void> {
  const t0 = performance.now();
  let bytes = 0;
  function* counted(frames: Iterable<Uint8Array>): Iterable<Uint8Array> {
    for (const frame of frames) {
      bytes += frame.length;
      yield frame;
    }
  }
  try {
    await writeFileAtomically(nodeFs, indexCheckpointPath(memberDir), counted(store.indexCheckpoint()));
    log.info('saved the key index for a fast restart', { bytes, ms: Math.round(performance.now() - t0) });
  } catch (err) {
    log.warn('could not save the key index; the next start scans the backend', { error: String(err) });
  }
}
