/**
 * One bucket's B+tree, built bottom-up from keys that arrive in ascending order. Each level of the tree
 * holds at most one page being filled: a leaf page is written out as soon as the next entry would not fit,
 * and its first key and page id go into the level above, which does the same. Memory is one page per level
 * (tree height, about log₂₅₀ of the entry count), whatever the data size.
 *
 * Worked example (page 4096): 20,000 entries of 100 bytes fill ~33 leaves of ~30 entries; their 33 branch
 * elements (16 bytes + 17-byte key) fit one branch page, which becomes the bucket's root at finish.
 * A bucket whose whole content is one small leaf (≤ pageBytes/4, bbolt's inline limit) is returned as an
 * inline page instead, as bbolt itself stores small buckets.
 */
import { assert } from '../base/assert.js';
import { compareBytes } from '../base/bytes.js';
import { branchPageFlag, bucketLeafFlag, elementBytes, leafPageFlag, pageHeaderBytes, pagesFor, writePageHeader } from './format.js';

/** Where finished pages go: appended in page-id order. */
export interface PageSink {
  /** Reserve `pages` consecutive page ids and return the first. */
  allocate(pages: number): number;
  /** The bytes of pages [pgid, pgid + bytes.length / pageBytes), already allocated. */
  write(pgid: number, bytes: Uint8Array): void;
}

interface Element {
  key: Uint8Array;
  /** Leaf: the value; branch: unused. */
  value: Uint8Array;
  /** Leaf: element flags; branch: the child's page id. */
  n: number;
}

interface Level {
  elements: Element[];
  /** Header plus elements plus their keys and values: the page's content size so far. */
  bytes: number;
  pagesWritten: number;
}

export type TreeRoot = { kind: 'page'; pgid: number } | { kind: 'inline'; page: Uint8Array };

export class TreeWriter {
  readonly #sink: PageSink;
  readonly #pageBytes: number;
  readonly #levels: Level[] = [];
  #lastKey: Uint8Array | undefined;
  #hasBucketEntries = false;
  #finished = false;

  constructor(sink: PageSink, pageBytes: number) {
    this.#sink = sink;
    this.#pageBytes = pageBytes;
    this.#levels.push(emptyLevel());
  }

  /** Add a leaf entry; keys must be strictly ascending (unsigned bytes). `bucket`: the value is a bucket header. */
  add(key: Uint8Array, value: Uint8Array, bucket = false): void {
    assert(!this.#finished, 'tree writer used after finish');
    assert(this.#lastKey === undefined || compareBytes(this.#lastKey, key) < 0, 'bbolt keys must arrive in ascending order, without duplicates');
    this.#lastKey = key;
    if (bucket) this.#hasBucketEntries = true;
    this.#push(0, { key, value, n: bucket ? bucketLeafFlag : 0 });
  }

  #push(depth: number, e: Element): void {
    if (this.#levels.length === depth) this.#levels.push(emptyLevel());
    const level = this.#levels[depth]!;
    const size = elementBytes + e.key.length + (depth === 0 ? e.value.length : 0);
    if (level.elements.length > 0 && level.bytes + size > this.#pageBytes) this.#spill(depth);
    level.elements.push(e);
    level.bytes += size;
  }

  /** Write the level's page and hand its first key to the level above. */
  #spill(depth: number): void {
    const level = this.#levels[depth]!;
    const first = level.elements[0]!.key;
    const pgid = this.#writePage(depth);
    this.#push(depth + 1, { key: first, value: empty, n: pgid });
  }

  #writePage(depth: number): number {
    const level = this.#levels[depth]!;
    const pages = pagesFor(level.bytes, this.#pageBytes);
    const pgid = this.#sink.allocate(pages);
    const bytes = new Uint8Array(pages * this.#pageBytes);
    encodeElements(bytes, level.elements, depth === 0);
    writePageHeader(bytes, 0, { id: pgid, flags: depth === 0 ? leafPageFlag : branchPageFlag, count: level.elements.length, overflow: pages - 1 });
    this.#sink.write(pgid, bytes);
    level.elements = [];
    level.bytes = pageHeaderBytes;
    level.pagesWritten++;
    return pgid;
  }

  /**
   * Write what is left, level by level, and return the root: the only page of the top level, or (when
   * allowed and small enough) the whole bucket as an inline page.
   */
  finish(allowInline: boolean): TreeRoot {
    assert(!this.#finished, 'tree writer finished twice');
    this.#finished = true;
    const leaves = this.#levels[0]!;
    if (allowInline && this.#levels.length === 1 && leaves.pagesWritten === 0 && !this.#hasBucketEntries && leaves.bytes <= this.#pageBytes / 4) {
      const page = new Uint8Array(leaves.bytes);
      encodeElements(page, leaves.elements, true);
      writePageHeader(page, 0, { id: 0, flags: leafPageFlag, count: leaves.elements.length, overflow: 0 });
      return { kind: 'inline', page };
    }
    for (let depth = 0; ; depth++) {
      const level = this.#levels[depth]!;
      const top = depth === this.#levels.length - 1;
      if (top && level.pagesWritten === 0) {
        // A branch level with a single child adds nothing: the child is the root.
        if (depth > 0 && level.elements.length === 1) return { kind: 'page', pgid: level.elements[0]!.n };
        return { kind: 'page', pgid: this.#writePage(depth) };
      }
      if (level.elements.length > 0) this.#spill(depth);
    }
  }
}

const empty = new Uint8Array(0);

function emptyLevel(): Level {
  return { elements: [], bytes: pageHeaderBytes, pagesWritten: 0 };
}

/** Elements after the page header, their keys (and values) after the elements; pos counts from each element. */
function encodeElements(page: Uint8Array, elements: Element[], leaf: boolean): void {
  const dv = new DataView(page.buffer, page.byteOffset, page.byteLength);
  let data = pageHeaderBytes + elements.length * elementBytes;
  elements.forEach((e, i) => {
    const at = pageHeaderBytes + i * elementBytes;
    const pos = data - at;
    if (leaf) {
      dv.setUint32(at, e.n, true);
      dv.setUint32(at + 4, pos, true);
      dv.setUint32(at + 8, e.key.length, true);
      dv.setUint32(at + 12, e.value.length, true);
    } else {
      dv.setUint32(at, pos, true);
      dv.setUint32(at + 4, e.key.length, true);
      dv.setBigUint64(at + 8, BigInt(e.n), true);
    }
    page.set(e.key, data);
    data += e.key.length;
    if (leaf) {
      page.set(e.value, data);
      data += e.value.length;
    }
  });
}
