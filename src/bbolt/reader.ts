/**
 * Reads a bbolt database file (any bbolt 1.3/1.4 writes: etcd 3.4, 3.5, 3.6) by positional reads, one page
 * at a time: iterating a bucket holds one page per tree level. Handles branch and leaf pages, overflow
 * pages, inline buckets, pages with free space, and both freelist types (array and hashmap share one page
 * format) or none (NoFreelistSync). Everything read is bounds-checked: a damaged file is a BboltFormatError,
 * never a crash or a huge allocation.
 */
import { open, type FileHandle } from 'node:fs/promises';
import {
  BboltFormatError, branchPageFlag, bucketHeaderBytes, bucketLeafFlag, decodeMeta, elementBytes, freelistPageFlag,
  leafPageFlag, metaBytes, pageHeaderBytes, readPageHeader, readPgid, type Meta, type PageHeader,
} from './format.js';

/** Deeper than any real tree (250-way fan-out): a cycle in a damaged file ends here. */
const treeDepthMax = 32;
/** Bytes read at once when a page is not in the current window. */
const readAheadBytes = 1024 * 1024;
const pageSizeCandidates = [4096, 8192, 16384, 32768, 65536, 512, 1024, 2048];

export interface LeafEntry {
  key: Uint8Array;
  value: Uint8Array;
  bucket: boolean;
}

export interface BucketStats {
  /** Levels from the root page to the leaves (1: the root is a leaf). */
  depth: number;
  branchPages: number;
  leafPages: number;
  /** Extra pages spanned by pages larger than one page (bbolt's BranchOverflowN + LeafOverflowN). */
  overflowPages: number;
  /** The bucket is stored inside its parent's leaf (no pages of its own). */
  inline: boolean;
}

interface Page extends PageHeader {
  bytes: Uint8Array;
}

export class BboltReader {
  readonly #file: FileHandle;
  readonly meta: Meta;
  #window: { start: number; bytes: Uint8Array } | undefined;

  private constructor(file: FileHandle, meta: Meta) {
    this.#file = file;
    this.meta = meta;
  }

  static async open(path: string): Promise<BboltReader> {
    const file = await open(path, 'r');
    try {
      return new BboltReader(file, await readMeta(file));
    } catch (err) {
      await file.close();
      throw err;
    }
  }

  /** bbolt's tx.Size(): the bytes the database occupies (high-water mark × page size). */
  get sizeBytes(): number {
    return this.meta.pgid * this.meta.pageBytes;
  }

  async close(): Promise<void> {
    await this.#file.close();
  }

  /** Top-level buckets, by name in key order, with their header value (for `entries`). */
  async *buckets(): AsyncIterable<{ name: Uint8Array; header: Uint8Array }> {
    for await (const e of this.#walk(this.meta.rootPgid)) if (e.bucket) yield { name: e.key, header: e.value };
  }

  /** The value of a top-level bucket's header, or undefined when the bucket does not exist. */
  async bucketHeader(name: Uint8Array): Promise<Uint8Array | undefined> {
    const wanted = Buffer.from(name);
    for await (const b of this.buckets()) if (wanted.equals(b.name)) return b.header;
    return undefined;
  }

  /** Key/value pairs of a bucket (its header from `buckets`), in key order; nested buckets are skipped. */
  async *entries(header: Uint8Array): AsyncIterable<[Uint8Array, Uint8Array]> {
    for await (const e of this.bucketEntries(header)) if (!e.bucket) yield [e.key, e.value];
  }

  /** Every leaf element of a bucket, nested bucket entries included. */
  bucketEntries(header: Uint8Array): AsyncIterable<LeafEntry> {
    if (header.length < bucketHeaderBytes) throw new BboltFormatError('truncated bucket header');
    const root = readPgid(new DataView(header.buffer, header.byteOffset, header.byteLength), 0);
    if (root !== 0) return this.#walk(root);
    const inline = header.subarray(bucketHeaderBytes);
    const page = { ...readPageHeader(inline), bytes: inline };
    if (page.flags !== leafPageFlag) throw new BboltFormatError('inline bucket without a leaf page');
    return (async function* () {
      yield* leafEntries(page);
    })();
  }

  /**
   * bbolt's Bucket.Stats for one bucket's own tree (nested buckets not followed): its depth (1: a single
   * leaf, inline or not), and its branch, leaf and overflow pages. Tests use it to state the shape of a file.
   */
  async bucketStats(header: Uint8Array): Promise<BucketStats> {
    if (header.length < bucketHeaderBytes) throw new BboltFormatError('truncated bucket header');
    const root = readPgid(new DataView(header.buffer, header.byteOffset, header.byteLength), 0);
    const stats: BucketStats = { depth: 1, branchPages: 0, leafPages: 0, overflowPages: 0, inline: root === 0 };
    if (root === 0) return stats;
    const pending: Array<{ pgid: number; depth: number }> = [{ pgid: root, depth: 1 }];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (next.depth > treeDepthMax) throw new BboltFormatError('bucket tree deeper than any valid file (a cycle?)');
      const page = await this.#page(next.pgid);
      stats.depth = Math.max(stats.depth, next.depth);
      stats.overflowPages += page.overflow;
      if (page.flags === leafPageFlag) {
        stats.leafPages++;
      } else if (page.flags === branchPageFlag) {
        stats.branchPages++;
        checkElements(page);
        const dv = new DataView(page.bytes.buffer, page.bytes.byteOffset, page.bytes.byteLength);
        // Children pushed last to first, so they are read in file order (the read-ahead window serves them).
        for (let i = page.count - 1; i >= 0; i--) pending.push({ pgid: readPgid(dv, pageHeaderBytes + i * elementBytes + 8), depth: next.depth + 1 });
      } else {
        throw new BboltFormatError(`page ${next.pgid}: expected a branch or leaf page, found flags 0x${page.flags.toString(16)}`);
      }
    }
    return stats;
  }

  /** Depth first, with an explicit stack (one generator, however deep the tree). */
  async *#walk(rootPgid: number): AsyncIterable<LeafEntry> {
    const stack: Array<{ children: number[]; next: number }> = [];
    let pgid: number | undefined = rootPgid;
    while (pgid !== undefined) {
      const page = await this.#page(pgid);
      if (page.flags === leafPageFlag) {
        yield* leafEntries(page);
      } else if (page.flags === branchPageFlag) {
        if (stack.length >= treeDepthMax) throw new BboltFormatError('bucket tree deeper than any valid file (a cycle?)');
        checkElements(page);
        const dv = new DataView(page.bytes.buffer, page.bytes.byteOffset, page.bytes.byteLength);
        const children: number[] = [];
        for (let i = 0; i < page.count; i++) children.push(readPgid(dv, pageHeaderBytes + i * elementBytes + 8));
        stack.push({ children, next: 0 });
      } else {
        throw new BboltFormatError(`page ${pgid}: expected a branch or leaf page, found flags 0x${page.flags.toString(16)}`);
      }
      pgid = undefined;
      while (stack.length > 0 && pgid === undefined) {
        const top = stack[stack.length - 1]!;
        if (top.next < top.children.length) pgid = top.children[top.next++];
        else stack.pop();
      }
    }
  }

  /** Page `pgid` with its overflow pages, checked against the high-water mark. */
  async #page(pgid: number): Promise<Page> {
    const size = this.meta.pageBytes;
    if (pgid < 2 || pgid >= this.meta.pgid) throw new BboltFormatError(`page ${pgid} outside the database (high-water mark ${this.meta.pgid})`);
    let bytes = await this.#read(pgid, 1);
    const header = readPageHeader(bytes);
    if (header.id !== pgid) throw new BboltFormatError(`page ${pgid}: header says page ${header.id}`);
    if (header.overflow > 0) {
      if (pgid + header.overflow >= this.meta.pgid) throw new BboltFormatError(`page ${pgid}: overflow past the high-water mark`);
      bytes = await this.#read(pgid, header.overflow + 1);
    }
    return { ...header, bytes };
  }

  /**
   * Pages [pgid, pgid + pages), through a read-ahead window: a bucket's pages mostly lie in file order
   * (always in files we write, largely in etcd's), so one read serves many pages.
   */
  async #read(pgid: number, pages: number): Promise<Uint8Array> {
    const size = this.meta.pageBytes;
    const start = pgid * size;
    const length = pages * size;
    const w = this.#window;
    if (w !== undefined && start >= w.start && start + length <= w.start + w.bytes.length) {
      return w.bytes.slice(start - w.start, start - w.start + length);
    }
    if (length >= readAheadBytes) return readExactly(this.#file, start, length);
    const windowPages = Math.min(readAheadBytes / size, this.meta.pgid - pgid);
    const bytes = await readExactly(this.#file, start, Math.max(windowPages * size, length));
    this.#window = { start, bytes };
    return bytes.slice(0, length);
  }

  /** Page ids on the freelist (empty when it is not persisted). */
  async freePages(): Promise<number[]> {
    if (this.meta.freelistPgid === undefined) return [];
    const page = await this.#page(this.meta.freelistPgid);
    if (page.flags !== freelistPageFlag) throw new BboltFormatError('the meta page does not point at a freelist page');
    const dv = new DataView(page.bytes.buffer, page.bytes.byteOffset, page.bytes.byteLength);
    let start = pageHeaderBytes;
    let count = page.count;
    if (count === 0xffff) {
      count = readPgid(dv, start);
      start += 8;
    }
    if (start + count * 8 > page.bytes.length) throw new BboltFormatError('freelist longer than its page');
    const ids: number[] = [];
    for (let i = 0; i < count; i++) ids.push(readPgid(dv, start + i * 8));
    return ids;
  }
}

function checkElements(page: Page): void {
  if (pageHeaderBytes + page.count * elementBytes > page.bytes.length) throw new BboltFormatError(`page ${page.id}: more elements than fit`);
}

function* leafEntries(page: Page): Iterable<LeafEntry> {
  checkElements(page);
  const b = page.bytes;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 0; i < page.count; i++) {
    const at = pageHeaderBytes + i * elementBytes;
    const flags = dv.getUint32(at, true);
    const start = at + dv.getUint32(at + 4, true);
    const ksize = dv.getUint32(at + 8, true);
    const vsize = dv.getUint32(at + 12, true);
    if (start + ksize + vsize > b.length) throw new BboltFormatError(`page ${page.id}: element ${i} runs past the page`);
    yield { key: b.slice(start, start + ksize), value: b.slice(start + ksize, start + ksize + vsize), bucket: (flags & bucketLeafFlag) !== 0 };
  }
}

async function readExactly(file: FileHandle, position: number, length: number): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await file.read(out, done, length - done, position + done);
    if (bytesRead === 0) throw new BboltFormatError(`file ends inside the page at offset ${position}`);
    done += bytesRead;
  }
  return out;
}

/** bbolt's open: meta 0 gives the page size; the valid meta with the higher txid wins. */
async function readMeta(file: FileHandle): Promise<Meta> {
  const tryAt = async (offset: number): Promise<Meta | undefined> => {
    try {
      return decodeMeta((await readExactly(file, offset + pageHeaderBytes, metaBytes)));
    } catch (err) {
      if (err instanceof BboltFormatError) return undefined;
      throw err;
    }
  };
  const meta0 = await tryAt(0);
  const sizes = meta0 !== undefined ? [meta0.pageBytes] : pageSizeCandidates;
  let best = meta0;
  for (const size of sizes) {
    const meta1 = await tryAt(size);
    if (meta1 !== undefined && meta1.pageBytes === size && (best === undefined || meta1.txid > best.txid)) best = meta1;
    if (meta1 !== undefined) break;
  }
  if (best === undefined) throw new BboltFormatError('invalid database: no valid meta page (not a bbolt file, or damaged)');
  const { size } = await file.stat();
  if (size < best.pgid * best.pageBytes) throw new BboltFormatError(`file size ${size} smaller than the database (${best.pgid} pages)`);
  return best;
}
