/**
 * The directory of scheduled snapshots (k3s's `${data-dir}/server/db/snapshots`): file names as k3s writes
 * them, `etcd-snapshot-<node>-<unix seconds>` (`.gz` when compressed), and the `ls`, `delete` and `prune`
 * verbs of `k3s etcd-snapshot` over it. Files being written end in `.tmp` and are never listed.
 */
import { readdir, stat, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';

export const snapshotNamePrefix = 'etcd-snapshot';
export const compressedSuffix = '.gz';
export const partialSuffix = '.tmp';

export interface SnapshotFileInfo {
  name: string;
  path: string;
  sizeBytes: number;
  /** From the name's timestamp when it has one (k3s's snapshots), otherwise the file's modification time. */
  createdMs: number;
  compressed: boolean;
}

export function scheduledSnapshotName(nodeName: string, unixSeconds: number, compressed: boolean): string {
  return `${snapshotNamePrefix}-${nodeName}-${unixSeconds}${compressed ? compressedSuffix : ''}`;
}

/** The unix-seconds timestamp of a scheduled snapshot's name of `nodeName`, or undefined for any other file. */
export function scheduledSnapshotSeconds(name: string, nodeName?: string): number | undefined {
  const bare = name.endsWith(compressedSuffix) ? name.slice(0, -compressedSuffix.length) : name;
  const m = /^(.+)-(\d+)$/.exec(bare);
  if (m === null) return undefined;
  const owner = m[1]!;
  if (!owner.startsWith(`${snapshotNamePrefix}-`)) return undefined;
  if (nodeName !== undefined && owner !== `${snapshotNamePrefix}-${nodeName}`) return undefined;
  return Number(m[2]);
}

/** Every snapshot file in `dir`, oldest first; an absent directory has none. */
export async function listSnapshots(dir: string): Promise<SnapshotFileInfo[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const out: SnapshotFileInfo[] = [];
  for (const name of names) {
    if (name.endsWith(partialSuffix) || name.startsWith('.')) continue;
    const path = join(dir, name);
    const st = await stat(path).catch(() => undefined);
    if (st === undefined || !st.isFile()) continue;
    const seconds = scheduledSnapshotSeconds(name);
    out.push({ name, path, sizeBytes: st.size, createdMs: seconds !== undefined ? seconds * 1000 : st.mtimeMs, compressed: name.endsWith(compressedSuffix) });
  }
  return out.sort((a, b) => a.createdMs - b.createdMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Deletes the named snapshots (names, not paths: nothing outside `dir` can be named). */
export async function deleteSnapshots(dir: string, names: readonly string[]): Promise<{ deleted: string[]; missing: string[] }> {
  const deleted: string[] = [];
  const missing: string[] = [];
  for (const name of names) {
    if (name === '' || basename(name) !== name || name === '.' || name === '..') throw new Error(`not a snapshot name: ${JSON.stringify(name)}`);
    try {
      await unlink(join(dir, name));
      deleted.push(name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      missing.push(name);
    }
  }
  return { deleted, missing };
}

/**
 * k3s's prune: of the scheduled snapshots of `nodeName`, keep the newest `retention`, delete the rest. Other
 * files (on-demand snapshots under other names, other nodes' snapshots) are never touched.
 */
export async function pruneSnapshots(dir: string, nodeName: string, retention: number): Promise<string[]> {
  if (!Number.isSafeInteger(retention) || retention < 1) throw new Error(`retention must be at least 1, got ${retention}`);
  const own = (await listSnapshots(dir)).filter((f) => scheduledSnapshotSeconds(f.name, nodeName) !== undefined);
  const excess = own.slice(0, Math.max(0, own.length - retention)).map((f) => f.name);
  return (await deleteSnapshots(dir, excess)).deleted;
}
