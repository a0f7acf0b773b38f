/**
 * The backend's consistent index, read without writing a byte of the data directory. LevelDB cannot open
 * read-only: an open replays its log into a new table, writes a new MANIFEST and deletes the old files
 * (issue 32, item 2: a refused start had already done that). So the probe opens a shadow of the directory
 * in the system's temp directory: its tables as symlinks (LevelDB never writes to a table once written, and
 * deleting an obsolete one deletes only the link), its small mutable files (CURRENT, MANIFEST, the log)
 * copied. The shadow is removed afterwards.
 *
 * Cost: one more LevelDB open per restart, replaying a log of at most the write buffer (4 MiB); measured in
 * the README's restart section.
 */
import { copyFile, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { KvStore } from '../mvcc/kv-store.js';
import { LevelBackend } from '../storage/level-backend.js';

/** LevelDB's files that are never written after they are complete. */
const immutableTable = /\.(ldb|sst)$/;
/** LevelDB's own lock and info log: the shadow has its own. */
const notCopied = new Set(['LOCK', 'LOG', 'LOG.old']);

/** The consistent index in the backend at `dbDir`: 0 when there is none, undefined when it cannot be read. */
export async function probeConsistentIndex(dbDir: string): Promise<number | undefined> {
  const names = await readdir(dbDir).catch(() => undefined);
  if (names === undefined || !names.includes('CURRENT')) return 0; // no database yet: LevelDB would create one
  const shadow = await mkdtemp(join(tmpdir(), 'etcetera-backend-probe-'));
  try {
    for (const name of names) {
      if (notCopied.has(name)) continue;
      const from = resolve(dbDir, name);
      if (immutableTable.test(name)) await symlink(from, join(shadow, name));
      else await copyFile(from, join(shadow, name));
    }
    const backend = await LevelBackend.open(shadow);
    try {
      return await KvStore.persistedIndex(backend);
    } finally {
      await backend.close();
    }
  } catch {
    return undefined; // the open that follows checks again (and meets the same problem, with its own message)
  } finally {
    await rm(shadow, { recursive: true, force: true });
  }
}
