/**
 * Where the store's values are read from: the values written since the last flush (the overlay, until the
 * backend holds them), a bounded cache of hot values, and the backend itself through synchronous point reads.
 * Memory holds the index and these two bounded sets, never the data set (issue 10).
 *
 * Every KeyValue handed out is decoded into bytes it owns, so keeping one never pins a larger buffer.
 */
import { assert } from '../base/assert.js';
import type { SyncReader } from './backend.js';
import { decodeKeyValue, encodeKeyValue } from './kv-codec.js';
import { codeIsTombstone, codeMain, codeSub, codeToBytes } from './rev-code.js';
import { ValueCache } from './value-cache.js';
import type { KeyValue } from './types.js';

const empty = new Uint8Array(0);

export function tombstoneKv(key: Uint8Array, main: number): KeyValue {
  return { key, createRevision: 0, modRevision: main, version: 0, value: empty, lease: 0n };
}

/** The 'key' bucket value: mvccpb.KeyValue; a tombstone as KeyValue{Key} only (etcd). */
export function storedKeyValue(code: number, kv: KeyValue): Uint8Array {
  return encodeKeyValue(codeIsTombstone(code) ? { ...kv, modRevision: 0 } : kv);
}

export class ValueStore {
  readonly #backend: SyncReader;
  /**
   * Written and not yet in the backend, in code order (a Map keeps insertion order): the stored bytes, the
   * very buffer the backend batch will write, so a put costs no second copy of its value.
   */
  readonly #overlay = new Map<number, Uint8Array>();
  readonly #cache: ValueCache;

  constructor(backend: SyncReader, cacheBytes: number) {
    this.#backend = backend;
    this.#cache = new ValueCache(cacheBytes);
  }

  /** A revision just written by apply, with its stored bytes. */
  written(code: number, stored: Uint8Array): void {
    this.#overlay.set(code, stored);
  }

  /**
   * Every revision with code ≤ upTo is now in the backend. They are not moved to the cache: LevelDB's
   * memtable answers recent reads as fast, and copying every write into the cache would churn it.
   */
  flushed(upTo: number): void {
    for (const code of this.#overlay.keys()) {
      if (code > upTo) break;
      this.#overlay.delete(code);
    }
  }

  /** A revision removed by compaction: it will never be read again. */
  dropped(code: number): void {
    this.#cache.delete(code);
  }

  /**
   * The KeyValue at a revision. A tombstone is the delete event's kv (key, modRevision); its key is read
   * from the backend unless the caller knows it. Cached or decoded into owned bytes: never mutate it.
   */
  read(code: number, key?: Uint8Array): KeyValue {
    if (key !== undefined && codeIsTombstone(code)) return tombstoneKv(key, codeMain(code));
    const cached = this.#cache.get(code);
    if (cached !== undefined) return cached;
    const kv = decodeKeyValue(this.raw(code));
    if (codeIsTombstone(code)) return tombstoneKv(kv.key, codeMain(code));
    this.#cache.set(code, kv);
    return kv;
  }

  /** The stored bytes of a revision (HashKV hashes exactly these). */
  raw(code: number): Uint8Array {
    const written = this.#overlay.get(code);
    if (written !== undefined) return written;
    const raw = this.#backend.getSync('key', codeToBytes(code));
    assert(raw !== undefined, `revision ${codeMain(code)}.${codeSub(code)} is in the index but not in the backend`);
    return raw;
  }

  /** The unflushed revisions, ascending: [code, stored bytes] (a copy of the list; the bytes are shared). */
  unflushed(): [number, Uint8Array][] {
    return [...this.#overlay];
  }

  /** Every byte array this store keeps (unflushed stored bytes, cached keys and values). */
  *retained(): IterableIterator<Uint8Array> {
    yield* this.#overlay.values();
    for (const kv of this.#cache.values()) {
      yield kv.key;
      yield kv.value;
    }
  }

  get overlaySize(): number {
    return this.#overlay.size;
  }

  get cacheBytes(): number {
    return this.#cache.bytes;
  }
}
