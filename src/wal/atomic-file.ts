/**
 * Files written whole or not at all, the one way every such file in the tree is written (the WAL's snapshot
 * files and profile memo, a member's identity and token, the key index checkpoint, received snapshot data,
 * saved and fetched snapshot files, the auto-TLS key and certificate):
 *
 *   1. write `<path>.tmp` (created new, O_EXCL, mode 0600 unless told);
 *   2. fsync it: its contents are on disk before any name points at them;
 *   3. rename it over `path`: atomic, readers see the old file or the new one;
 *   4. fsync the directory: the rename itself survives a crash. Without it, a crash can bring back the old
 *      name (or none), after the caller was told the file was written.
 *
 * Through FsPort, so the WAL's simulated disk (test/wal/sim-fs.ts) can crash it between any two steps. It
 * lives beside that port: wal/ is the lowest layer that may use node:fs, below everything that writes files.
 */
import { dirname } from 'node:path';
import type { FilePort, FsPort } from './fs-port.js';

/** Files only this user may read (keys, tokens, data), as etcd's fileutil.PrivateFileMode. */
export const privateFileMode = 0o600;

export interface AtomicWriteOptions {
  /** Permission bits of the new file (before the umask). Default privateFileMode. */
  mode?: number;
  /** The temp file's path, in the same directory as `path` (the rename must not cross file systems). Default `<path>.tmp`. */
  tmpPath?: string;
}

/** A file being written under its temp name; it gets its final name at `commit`. */
export interface AtomicFile {
  readonly tmpPath: string;
  /** Appends `chunk`. */
  write(chunk: Uint8Array): Promise<void>;
  /** fsync what was written so far (a caller that times its fsync apart from the rest of commit). */
  sync(): Promise<void>;
  /** fsync (unless nothing was written since sync()), close, rename to the final name, fsync the directory. */
  commit(): Promise<void>;
  /** Closes and removes the temp file; the final name is untouched. Never throws. */
  abort(): Promise<void>;
}

/** Starts writing `path`: a stale temp file (a crash's leftover) is removed, a new one created. */
export async function createAtomicFile(fs: FsPort, path: string, options: AtomicWriteOptions = {}): Promise<AtomicFile> {
  const tmpPath = options.tmpPath ?? `${path}.tmp`;
  if (dirname(tmpPath) !== dirname(path)) throw new Error(`temp file ${tmpPath} is not beside ${path}`);
  await fs.unlink(tmpPath).catch(() => undefined);
  const file: FilePort = await fs.open(tmpPath, 'create', options.mode ?? privateFileMode);
  let position = 0;
  let open = true;
  let dirty = true;
  const close = async (): Promise<void> => {
    if (!open) return;
    open = false;
    await file.close();
  };
  return {
    tmpPath,
    async write(chunk) {
      dirty = true;
      await file.write(chunk, chunk.length, position);
      position += chunk.length;
    },
    async sync() {
      dirty = false;
      await file.sync();
    },
    async commit() {
      if (dirty) await file.sync();
      await close();
      await fs.rename(tmpPath, path);
      await fs.syncDir(dirname(path));
    },
    async abort() {
      await close().catch(() => undefined);
      await fs.unlink(tmpPath).catch(() => undefined);
    },
  };
}

/** Writes `path` whole or not at all from bytes or chunks; on a failure the temp file is removed and the error thrown. */
export async function writeFileAtomically(
  fs: FsPort,
  path: string,
  data: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const file = await createAtomicFile(fs, path, options);
  try {
    if (data instanceof Uint8Array) await file.write(data);
    else for await (const chunk of data) await file.write(chunk);
    await file.commit();
  } catch (err) {
    await file.abort();
    throw err;
  }
}

/**
 * Gives its final name to a file another writer produced under a temp name in the same directory (a stream
 * pipeline, a snapshot export): steps 2 to 4 above. Its fsync costs nothing when the writer synced already.
 */
export async function publishFile(fs: FsPort, tmpPath: string, path: string): Promise<void> {
  if (dirname(tmpPath) !== dirname(path)) throw new Error(`temp file ${tmpPath} is not beside ${path}`);
  const file = await fs.open(tmpPath, 'existing');
  try {
    await file.sync();
  } finally {
    await file.close();
  }
  await fs.rename(tmpPath, path);
  await fs.syncDir(dirname(path));
}
