/**
 * The WAL's only door to the file system. Two adapters: NodeFsPort (here: node:fs/promises on file
 * descriptors) and the simulated FS in test/wal/sim-fs.ts, which models un-synced data and directory entries
 * and can crash at any numbered operation. Keep this port small: every method is one syscall-sized step, so
 * a crash can be injected between any two of them.
 */
import { constants as fsConstants, fdatasync, writeSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { acquireDirLock, type DirLock } from './lock.js';

export type { DirLock };

export interface FilePort {
  readonly path: string;
  /** Write all of `data[0, length)` at `position` (one pwrite unless the kernel writes short). */
  write(data: Uint8Array, length: number, position: number): Promise<void>;
  /** The same write on the calling thread, for small writes on fast devices (WalTuning.inlineWriteBytesMax). */
  writeNow?(data: Uint8Array, length: number, position: number): void;
  /** Read up to `length` bytes at `position` into `into`; returns the count (short at end of file). */
  read(into: Uint8Array, length: number, position: number): Promise<number>;
  /** fdatasync: file data (and the size, if it changed) durable. */
  datasync(): Promise<void>;
  /** fsync: data and all metadata durable. */
  sync(): Promise<void>;
  truncate(length: number): Promise<void>;
  size(): Promise<number>;
  close(): Promise<void>;
}

export interface FsPort {
  /** Create the directory (and parents) if missing. */
  mkdirp(dir: string): Promise<void>;
  /** Names (not paths) of the entries in `dir`. */
  list(dir: string): Promise<string[]>;
  /**
   * `create`: a new file that must not exist (O_CREAT|O_EXCL), with permission bits `fileMode` (default
   * 0600; the simulated disk keeps none); `existing`: read-write, must exist.
   */
  open(path: string, mode: 'create' | 'existing', fileMode?: number): Promise<FilePort>;
  /** Whole file; undefined when it does not exist. */
  readFile(path: string): Promise<Uint8Array | undefined>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** fsync the directory itself, making creates, renames and unlinks in it durable. */
  syncDir(dir: string): Promise<void>;
  /** Exclusive lock on the directory while the WAL is open; rejects with WalLockedError. */
  lock(dir: string): Promise<DirLock>;
  /** Bytes free for this process on the directory's file system (statfs); absent or undefined when unknown. */
  freeBytes?(dir: string): Promise<number | undefined>;
}

class NodeFile implements FilePort {
  readonly #fh: fsp.FileHandle;
  constructor(
    readonly path: string,
    fh: fsp.FileHandle,
  ) {
    this.#fh = fh;
  }
  async write(data: Uint8Array, length: number, position: number): Promise<void> {
    let done = 0;
    while (done < length) {
      const { bytesWritten } = await this.#fh.write(data, done, length - done, position + done);
      if (bytesWritten <= 0) throw new Error(`short write to ${this.path}`);
      done += bytesWritten;
    }
  }
  writeNow(data: Uint8Array, length: number, position: number): void {
    let done = 0;
    while (done < length) {
      const bytesWritten = writeSync(this.#fh.fd, data, done, length - done, position + done);
      if (bytesWritten <= 0) throw new Error(`short write to ${this.path}`);
      done += bytesWritten;
    }
  }
  async read(into: Uint8Array, length: number, position: number): Promise<number> {
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.#fh.read(into, done, length - done, position + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done;
  }
  datasync(): Promise<void> {
    // The callback form: FileHandle's promise form adds its own bookkeeping to every call on the hot path.
    return new Promise((resolve, reject) => fdatasync(this.#fh.fd, (error) => (error ? reject(error) : resolve())));
  }
  sync(): Promise<void> {
    return this.#fh.sync();
  }
  truncate(length: number): Promise<void> {
    return this.#fh.truncate(length);
  }
  async size(): Promise<number> {
    return (await this.#fh.stat()).size;
  }
  close(): Promise<void> {
    return this.#fh.close();
  }
}

export class NodeFsPort implements FsPort {
  async mkdirp(dir: string): Promise<void> {
    await fsp.mkdir(dir, { recursive: true });
  }
  list(dir: string): Promise<string[]> {
    return fsp.readdir(dir);
  }
  async open(path: string, mode: 'create' | 'existing', fileMode = 0o600): Promise<FilePort> {
    const flags =
      mode === 'create'
        ? fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_EXCL
        : fsConstants.O_RDWR;
    return new NodeFile(path, await fsp.open(path, flags, fileMode));
  }
  async readFile(path: string): Promise<Uint8Array | undefined> {
    try {
      return await fsp.readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }
  rename(from: string, to: string): Promise<void> {
    return fsp.rename(from, to);
  }
  unlink(path: string): Promise<void> {
    return fsp.unlink(path);
  }
  async syncDir(dir: string): Promise<void> {
    const fh = await fsp.open(dir, fsConstants.O_RDONLY);
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }
  lock(dir: string): Promise<DirLock> {
    return acquireDirLock(dir);
  }
  async freeBytes(dir: string): Promise<number | undefined> {
    const s = await fsp.statfs(dir).catch(() => undefined);
    return s === undefined ? undefined : s.bavail * s.bsize;
  }
}
