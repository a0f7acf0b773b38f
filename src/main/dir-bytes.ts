/**
 * The bytes a directory's files occupy: LevelDB's tables and its log (which holds what the memtable holds).
 * The quota measures this, as etcd's measures its bbolt file; LevelDB's own estimate counts tables only, so
 * a small database would seem empty.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

export async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir)) {
    try {
      total += (await stat(join(dir, name))).size;
    } catch {
      // LevelDB removed an obsolete file between the listing and the stat.
    }
  }
  return total;
}
