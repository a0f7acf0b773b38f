/**
 * Writes a bbolt database file from sorted streams, one top-level bucket after another (names ascending),
 * without holding the data set: pages go to the file as they fill (tree-writer.ts), buffered up to
 * `writeBufferBytes`. At the end come the root bucket's pages, an empty freelist page, and the two meta
 * pages (pages 0 and 1, written last, so a file cut short has no valid meta and is refused by bbolt).
 * The result is what bbolt itself could have written: every page below the high-water mark is reachable
 * exactly once, so `tx.Check()` (run by `etcdctl snapshot status`) finds nothing to report.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { assert } from '../base/assert.js';
import { compareBytes } from '../base/bytes.js';
import { bucketHeaderBytes, defaultPageBytes, encodeMeta, freelistPageFlag, metaPageFlag, pageHeaderBytes, writePageHeader } from './format.js';
import { TreeWriter, type PageSink, type TreeRoot } from './tree-writer.js';

/** Pages gathered before one write to the file. */
const writeBufferBytes = 1024 * 1024;

export interface BboltWriterOptions {
  pageBytes?: number;
  /** fsync the file before finish() resolves (default true). */
  sync?: boolean;
}

class FileSink implements PageSink {
  next = 2; // pages 0 and 1 are the metas
  #parts: Uint8Array[] = [];
  #bytes = 0;
  #offset: number;
  readonly #file: FileHandle;
  readonly #pageBytes: number;

  constructor(file: FileHandle, pageBytes: number) {
    this.#file = file;
    this.#pageBytes = pageBytes;
    this.#offset = 2 * pageBytes;
  }

  allocate(pages: number): number {
    const pgid = this.next;
    this.next += pages;
    return pgid;
  }

  write(pgid: number, bytes: Uint8Array): void {
    // Pages are written in allocation order, so the file is appended to.
    assert(pgid * this.#pageBytes === this.#offset + this.#bytes, 'bbolt pages must be written in allocation order');
    this.#parts.push(bytes);
    this.#bytes += bytes.length;
  }

  get buffered(): number {
    return this.#bytes;
  }

  async drain(): Promise<void> {
    if (this.#bytes === 0) return;
    const parts = this.#parts;
    const bytes = this.#bytes;
    this.#parts = [];
    this.#bytes = 0;
    await this.#file.writev(parts, this.#offset);
    this.#offset += bytes;
  }
}

export class BboltWriter {
  readonly #file: FileHandle;
  readonly #sink: FileSink;
  readonly #pageBytes: number;
  readonly #sync: boolean;
  readonly #root: TreeWriter;
  #lastBucket: Uint8Array | undefined;
  #done = false;

  private constructor(file: FileHandle, options: BboltWriterOptions) {
    this.#file = file;
    this.#pageBytes = options.pageBytes ?? defaultPageBytes;
    this.#sync = options.sync ?? true;
    this.#sink = new FileSink(file, this.#pageBytes);
    this.#root = new TreeWriter(this.#sink, this.#pageBytes);
  }

  /** Create (or truncate) `path`. */
  static async create(path: string, options: BboltWriterOptions = {}): Promise<BboltWriter> {
    return new BboltWriter(await open(path, 'w', 0o600), options);
  }

  /** Write one top-level bucket; names ascending across calls, entries ascending by key within one. */
  async bucket(name: Uint8Array, entries: AsyncIterable<[Uint8Array, Uint8Array]> | Iterable<[Uint8Array, Uint8Array]>): Promise<void> {
    assert(!this.#done, 'bbolt writer used after finish');
    assert(this.#lastBucket === undefined || compareBytes(this.#lastBucket, name) < 0, 'bbolt buckets must be written in ascending name order');
    this.#lastBucket = name;
    const tree = new TreeWriter(this.#sink, this.#pageBytes);
    for await (const [k, v] of entries) {
      tree.add(k, v);
      if (this.#sink.buffered >= writeBufferBytes) await this.#sink.drain();
    }
    this.#root.add(name, bucketValue(tree.finish(true)), true);
    await this.#sink.drain();
  }

  /** Root bucket, freelist, metas; then close. Resolves with the file size. */
  async finish(): Promise<{ sizeBytes: number }> {
    assert(!this.#done, 'bbolt writer finished twice');
    this.#done = true;
    try {
      const root = this.#root.finish(false);
      assert(root.kind === 'page', 'the root bucket always has a page');
      const freelist = this.#sink.allocate(1);
      const page = new Uint8Array(this.#pageBytes);
      writePageHeader(page, 0, { id: freelist, flags: freelistPageFlag, count: 0, overflow: 0 });
      this.#sink.write(freelist, page);
      await this.#sink.drain();
      const pgid = this.#sink.next;
      // Both metas describe the same, complete tree; bbolt uses the one with the higher txid (page txid % 2).
      for (const txid of [2n, 1n]) {
        const meta = new Uint8Array(this.#pageBytes);
        const id = Number(txid % 2n);
        writePageHeader(meta, 0, { id, flags: metaPageFlag, count: 0, overflow: 0 });
        meta.set(encodeMeta({ pageBytes: this.#pageBytes, flags: 0, rootPgid: root.pgid, rootSequence: 0n, freelistPgid: freelist, pgid, txid }), pageHeaderBytes);
        await this.#file.write(meta, 0, meta.length, id * this.#pageBytes);
      }
      if (this.#sync) await this.#file.sync();
      return { sizeBytes: pgid * this.#pageBytes };
    } finally {
      await this.#file.close();
    }
  }

  /** Close without finishing (the file is left without valid metas: unusable, as intended). */
  async abort(): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    await this.#file.close();
  }
}

function bucketValue(root: TreeRoot): Uint8Array {
  const inline = root.kind === 'inline' ? root.page : new Uint8Array(0);
  const out = new Uint8Array(bucketHeaderBytes + inline.length);
  const dv = new DataView(out.buffer);
  dv.setBigUint64(0, root.kind === 'page' ? BigInt(root.pgid) : 0n, true);
  dv.setBigUint64(8, 0n, true); // sequence (NextSequence): etcd never uses it
  out.set(inline, bucketHeaderBytes);
  return out;
}
