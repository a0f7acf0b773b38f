/**
 * A simulated file system for crash tests: in memory, modelling what a power cut or SIGKILL + reboot loses.
 *
 * Model (the conservative reading of POSIX on ext4):
 * - A file's contents are durable only up to its last fsync/fdatasync; later writes are lost on crash.
 * - Directory entries (create, rename, unlink) are durable only after fsync of the directory; a crash
 *   restores the directory as of its last fsync (a synced file whose name was never synced is lost).
 * - `crashAfterOp: n`: mutating operation number n takes effect, then the machine dies: that operation and
 *   every later one reject with SimCrashError and change nothing.
 * - crashImage(): the file system as it comes back after the crash, optionally with the last write torn
 *   (a prefix of it, or a random subset of its 512-byte sectors, reached the disk).
 * - `failOp(op, n)`: make operation n fail with EIO (a dying disk) without crashing; returning an errno code
 *   instead of true fails it with that code (ENOSPC: a full disk).
 * - `beforeSync`: a hook awaited inside every datasync/sync (tests gate syncs to observe group commit).
 * - `space`: a disk of a capacity (issue 32): a write or truncate that would grow the files past what is free
 *   fails with ENOSPC, as a real file system's would, and freeBytes() answers as statfs does. The bytes of
 *   other files on the same disk (the backend's, received snapshots) count against it through `otherBytes`.
 *
 * Operations counted (crash points): mkdirp, open(create), write, datasync, sync, truncate, rename, unlink,
 * syncDir. Reads, listing and close are not: a crash between them equals a crash after the previous count.
 */
import type { DirLock, FilePort, FsPort } from '../../src/wal/fs-port.js';
import { WalLockedError } from '../../src/wal/errors.js';

export class SimCrashError extends Error {
  override name = 'SimCrashError';
}

class Inode {
  data: Uint8Array = new Uint8Array(0);
  durable: Uint8Array = new Uint8Array(0);
}

interface Dir {
  current: Map<string, Inode>;
  durable: Map<string, Inode>;
}

export interface SimFsOptions {
  crashAfterOp?: number;
  failOp?: (op: string, n: number) => boolean | string;
  beforeSync?: () => Promise<void>;
  space?: { capacityBytes: number; otherBytes(): number; onFull?(path: string): void };
}

export type TearMode = 'none' | 'prefix' | 'sectors';

function split(path: string): [string, string] {
  const i = path.lastIndexOf('/');
  return [path.slice(0, i), path.slice(i + 1)];
}

function errno(code: string, message: string): Error {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

export class SimFs implements FsPort {
  readonly #dirs = new Map<string, Dir>();
  readonly #locks = new Set<string>();
  #ops = 0;
  #crashed = false;
  #lastWrite: { inode: Inode; position: number; bytes: Uint8Array } | undefined;
  readonly log: string[] = [];
  options: SimFsOptions;

  constructor(options: SimFsOptions = {}) {
    this.options = options;
  }

  get ops(): number {
    return this.#ops;
  }
  get crashed(): boolean {
    return this.#crashed;
  }

  /** Counts a mutating operation; `apply` runs unless crashed or failing; crash point after it. */
  step<T>(op: string, apply: () => T): T {
    if (this.#crashed) throw new SimCrashError(`after crash: ${op}`);
    const n = ++this.#ops;
    this.log.push(`${n} ${op}`);
    const fail = this.options.failOp?.(op, n);
    if (fail !== undefined && fail !== false) throw errno(fail === true ? 'EIO' : fail, `${op} (simulated)`);
    const result = apply();
    if (n === this.options.crashAfterOp) {
      this.#crashed = true;
      throw new SimCrashError(`crash after op ${n}: ${op}`);
    }
    return result;
  }

  #dir(path: string): Dir {
    const d = this.#dirs.get(path);
    if (!d) throw errno('ENOENT', `no directory ${path}`);
    return d;
  }

  #inode(path: string): Inode {
    const [dir, name] = split(path);
    const inode = this.#dir(dir).current.get(name);
    if (!inode) throw errno('ENOENT', path);
    return inode;
  }

  async mkdirp(dir: string): Promise<void> {
    if (this.#dirs.has(dir)) return;
    this.step(`mkdirp ${dir}`, () => this.#dirs.set(dir, { current: new Map(), durable: new Map() }));
  }

  async list(dir: string): Promise<string[]> {
    return [...this.#dir(dir).current.keys()].sort();
  }

  async open(path: string, mode: 'create' | 'existing'): Promise<FilePort> {
    if (mode === 'existing') return new SimFile(this, path, this.#inode(path));
    const [dir, name] = split(path);
    const d = this.#dir(dir);
    if (d.current.has(name)) throw errno('EEXIST', path);
    const inode = new Inode();
    this.step(`create ${path}`, () => d.current.set(name, inode));
    return new SimFile(this, path, inode);
  }

  async readFile(path: string): Promise<Uint8Array | undefined> {
    const [dir, name] = split(path);
    const inode = this.#dirs.get(dir)?.current.get(name);
    return inode ? inode.data.slice() : undefined;
  }

  async rename(from: string, to: string): Promise<void> {
    const inode = this.#inode(from);
    this.step(`rename ${from} ${to}`, () => {
      const [fd, fn] = split(from);
      const [td, tn] = split(to);
      this.#dir(fd).current.delete(fn);
      this.#dir(td).current.set(tn, inode);
    });
  }

  async unlink(path: string): Promise<void> {
    this.#inode(path);
    const [dir, name] = split(path);
    this.step(`unlink ${path}`, () => this.#dir(dir).current.delete(name));
  }

  async syncDir(dir: string): Promise<void> {
    const d = this.#dir(dir);
    await this.options.beforeSync?.();
    this.step(`syncDir ${dir}`, () => {
      d.durable = new Map(d.current);
    });
  }

  async lock(dir: string): Promise<DirLock> {
    if (this.#locks.has(dir)) throw new WalLockedError(dir, 'this process (simulated)');
    this.#locks.add(dir);
    return { release: async () => void this.#locks.delete(dir) };
  }

  /** Bytes the files hold now (each file once, however many names it has). */
  usedBytes(): number {
    const seen = new Set<Inode>();
    let n = 0;
    for (const d of this.#dirs.values()) {
      for (const inode of d.current.values()) {
        if (seen.has(inode)) continue;
        seen.add(inode);
        n += inode.data.length;
      }
    }
    return n;
  }

  /** statfs: unknown (undefined) on a disk without a capacity. */
  async freeBytes(_dir: string): Promise<number | undefined> {
    const space = this.options.space;
    return space === undefined ? undefined : space.capacityBytes - this.usedBytes() - space.otherBytes();
  }

  /** ENOSPC when growing the files by `bytes` would not fit the disk's capacity. */
  claim(path: string, bytes: number): void {
    const space = this.options.space;
    if (space === undefined || bytes <= 0) return;
    if (this.usedBytes() + space.otherBytes() + bytes <= space.capacityBytes) return;
    space.onFull?.(path);
    throw errno('ENOSPC', `no space left on device: ${path} (simulated)`);
  }

  noteWrite(inode: Inode, position: number, bytes: Uint8Array): void {
    this.#lastWrite = { inode, position, bytes };
  }

  /** The file system after a crash: durable directory entries and durable contents only. */
  crashImage(tear: TearMode = 'none', random: () => number = Math.random): SimFs {
    const image = new SimFs();
    const copies = new Map<Inode, Inode>();
    const last = this.#lastWrite;
    for (const [path, d] of this.#dirs) {
      const current = new Map<string, Inode>();
      for (const [name, inode] of d.durable) {
        let copy = copies.get(inode);
        if (!copy) {
          copy = new Inode();
          copy.data = inode.durable.slice();
          if (tear !== 'none' && last && last.inode === inode) copy.data = torn(copy.data, last, tear, random);
          copy.durable = copy.data.slice();
          copies.set(inode, copy);
        }
        current.set(name, copy);
      }
      image.#dirs.set(path, { current, durable: new Map(current) });
    }
    return image;
  }

  /** Direct access for corruption tests: the current bytes of a file (mutations are visible). */
  bytes(path: string): Uint8Array {
    return this.#inode(path).data;
  }

  /** Corruption tests: a file's current bytes (as bytes() changed them) are what the disk holds, crash or not. */
  persistBytes(path: string): void {
    const inode = this.#inode(path);
    inode.durable = inode.data.slice();
  }
}

/**
 * Applies part of the last write on top of the durable contents: a prefix, or some of its sectors. A disk
 * writes whole 512-byte sectors, aligned in the file, so a tear falls on a sector boundary (or at the write's
 * end): recovery tells a torn record from a damaged one by a sector of it that is still zero.
 */
function torn(durable: Uint8Array, w: { position: number; bytes: Uint8Array }, mode: TearMode, random: () => number): Uint8Array {
  const out = new Uint8Array(Math.max(durable.length, w.position + w.bytes.length));
  out.set(durable);
  const end = w.position + w.bytes.length;
  const boundary = (at: number): number => Math.min(end, Math.max(w.position, Math.floor(at / 512) * 512));
  if (mode === 'prefix') {
    const keep = boundary(w.position + Math.floor(random() * w.bytes.length)) - w.position;
    out.set(w.bytes.subarray(0, keep), w.position);
    return out.subarray(0, Math.max(durable.length, w.position + keep)).slice();
  }
  for (let s = w.position; s < end; s = Math.min(end, (Math.floor(s / 512) + 1) * 512)) {
    const stop = Math.min(end, (Math.floor(s / 512) + 1) * 512);
    if (random() < 0.5) out.set(w.bytes.subarray(s - w.position, stop - w.position), s);
  }
  return out;
}

class SimFile implements FilePort {
  readonly #fs: SimFs;
  readonly #inode: Inode;
  #closed = false;
  constructor(
    fs: SimFs,
    readonly path: string,
    inode: Inode,
  ) {
    this.#fs = fs;
    this.#inode = inode;
  }
  #check(): void {
    if (this.#closed) throw errno('EBADF', this.path);
  }
  async write(data: Uint8Array, length: number, position: number): Promise<void> {
    this.writeNow(data, length, position);
  }
  writeNow(data: Uint8Array, length: number, position: number): void {
    this.#check();
    const bytes = new Uint8Array(length); // a copy: callers reuse their buffers (Buffer#slice would alias)
    bytes.set(data.subarray(0, length));
    this.#fs.claim(this.path, position + length - this.#inode.data.length);
    this.#fs.step(`write ${this.path} @${position} +${length}`, () => {
      const inode = this.#inode;
      const end = position + length;
      if (end > inode.data.length) {
        // Grown in place while its buffer has room, else into one twice its size: appending records one by one
        // copied the whole file each time (the fill seeds' 64 KiB values made that most of their time). The
        // buffer past a file's length is never written (truncate allocates anew), so it reads as zeros.
        const data = inode.data;
        if (data.byteOffset === 0 && end <= data.buffer.byteLength) inode.data = new Uint8Array(data.buffer, 0, end);
        else {
          const grown = new Uint8Array(Math.max(end, 2 * data.length));
          grown.set(data);
          inode.data = grown.subarray(0, end);
        }
      }
      inode.data.set(bytes, position);
      this.#fs.noteWrite(inode, position, bytes);
    });
  }
  async read(into: Uint8Array, length: number, position: number): Promise<number> {
    this.#check();
    const src = this.#inode.data.subarray(position, position + length);
    into.set(src);
    return src.length;
  }
  async datasync(): Promise<void> {
    await this.#sync('datasync');
  }
  async sync(): Promise<void> {
    await this.#sync('sync');
  }
  async #sync(op: string): Promise<void> {
    this.#check();
    await this.#fs.options.beforeSync?.();
    this.#fs.step(`${op} ${this.path}`, () => {
      this.#inode.durable = this.#inode.data.slice();
    });
  }
  async truncate(length: number): Promise<void> {
    this.#check();
    this.#fs.claim(this.path, length - this.#inode.data.length);
    this.#fs.step(`truncate ${this.path} ${length}`, () => {
      const next = new Uint8Array(length);
      next.set(this.#inode.data.subarray(0, length));
      this.#inode.data = next;
    });
  }
  async size(): Promise<number> {
    this.#check();
    return this.#inode.data.length;
  }
  async close(): Promise<void> {
    this.#closed = true;
  }
}
