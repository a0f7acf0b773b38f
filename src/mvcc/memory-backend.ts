/**
 * The in-memory Backend adapter (simulation and tests): one sorted array per bucket. A batch is applied
 * synchronously inside write(), so it is atomic; a scan reads a copy taken when iteration starts, like a
 * LevelDB iterator's implicit snapshot. Keys and values are copied in and out: callers can't alias them.
 */
import { assert } from '../base/assert.js';
import { compareBytes } from '../base/bytes.js';
import { buckets, type Backend, type BackendView, type BatchOp, type Bucket, type ScanOptions, type WriteOptions } from './backend.js';

type Entry = [Uint8Array, Uint8Array];

/** Rough per-entry overhead, so sizeBytes grows with the entry count as a real store's would. */
const entryOverheadBytes = 16;

export class MemoryBackend implements Backend {
  readonly #buckets = new Map<Bucket, Entry[]>(buckets.map((b) => [b, []]));
  #closed = false;
  #sizeBytes = 0;

  static #lowerBound(entries: Entry[], key: Uint8Array): number {
    let lo = 0;
    let hi = entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBytes(entries[mid]![0], key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #entries(bucket: Bucket): Entry[] {
    assert(!this.#closed, 'backend is closed');
    const entries = this.#buckets.get(bucket);
    assert(entries !== undefined, `unknown bucket ${bucket}`);
    return entries;
  }

  #apply(op: BatchOp): void {
    const entries = this.#entries(op.bucket);
    const last = entries[entries.length - 1];
    // Appends in key order (revisions) are the common case: skip the search.
    const pos = last !== undefined && compareBytes(last[0], op.key) < 0 ? entries.length : MemoryBackend.#lowerBound(entries, op.key);
    const found = entries[pos];
    const exists = found !== undefined && compareBytes(found[0], op.key) === 0;
    if (op.type === 'put') {
      const entry: Entry = [op.key.slice(), op.value.slice()];
      if (exists) {
        this.#sizeBytes += op.value.length - found[1].length;
        entries[pos] = entry;
      } else {
        this.#sizeBytes += op.key.length + op.value.length + entryOverheadBytes;
        entries.splice(pos, 0, entry);
      }
    } else if (exists) {
      this.#sizeBytes -= found[0].length + found[1].length + entryOverheadBytes;
      entries.splice(pos, 1);
    }
  }

  async write(ops: BatchOp[], _options?: WriteOptions): Promise<void> {
    assert(!this.#closed, 'backend is closed');
    for (const op of ops) this.#entries(op.bucket);
    for (const op of ops) this.#apply(op);
  }

  async get(bucket: Bucket, key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.getSync(bucket, key);
  }

  getSync(bucket: Bucket, key: Uint8Array): Uint8Array | undefined {
    const entries = this.#entries(bucket);
    const found = entries[MemoryBackend.#lowerBound(entries, key)];
    return found !== undefined && compareBytes(found[0], key) === 0 ? found[1].slice() : undefined;
  }

  scan(bucket: Bucket, options: ScanOptions = {}): AsyncIterable<[Uint8Array, Uint8Array]> {
    const entries = this.#entries(bucket);
    return {
      [Symbol.asyncIterator]: () => {
        const start = options.gte === undefined ? 0 : MemoryBackend.#lowerBound(entries, options.gte);
        const end = options.lt === undefined ? entries.length : MemoryBackend.#lowerBound(entries, options.lt);
        const copy = entries.slice(start, Math.max(start, end));
        let i = 0;
        return {
          next: async (): Promise<IteratorResult<[Uint8Array, Uint8Array]>> => {
            const e = copy[i++];
            return e === undefined ? { done: true, value: undefined } : { done: false, value: [e[0].slice(), e[1].slice()] };
          },
        };
      },
    };
  }

  view(): BackendView {
    const copy = this.clone();
    return { get: (bucket, key) => copy.get(bucket, key), scan: (bucket, options) => copy.scan(bucket, options), close: () => copy.close() };
  }

  async clear(): Promise<void> {
    assert(!this.#closed, 'backend is closed');
    for (const bucket of buckets) this.#buckets.set(bucket, []);
    this.#sizeBytes = 0;
  }

  async sizeBytes(): Promise<number> {
    assert(!this.#closed, 'backend is closed');
    return this.#sizeBytes;
  }

  async defragment(): Promise<void> {
    assert(!this.#closed, 'backend is closed');
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  /** A backend with the same contents (for crash/restart tests: the "disk" outlives the process). */
  clone(): MemoryBackend {
    const copy = new MemoryBackend();
    for (const [bucket, entries] of this.#buckets) copy.#buckets.set(bucket, entries.map(([k, v]) => [k, v] as Entry));
    copy.#sizeBytes = this.#sizeBytes;
    return copy;
  }
}
