/**
 * Stores for the watch tests: a minimal in-memory store with the WatchableStore contract (the hub on its own),
 * and the real KvStore behind the same driving methods. Every watch test runs against both.
 */
import { fromUtf8, utf8 } from '../../src/base/index.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { EventType, MvccError, type Event, type KeyValue, type RequestOp } from '../../src/mvcc/types.js';
import type { WatchableStore } from '../../src/mvcc/watch-types.js';

export type FakeOp = { key: string; value: string } | { key: string; delete: true };

export class FakeStore implements TestStore {
  revision = 1;
  compactRevision = 0;
  #history: Event[] = [];
  #live = new Map<string, KeyValue>();
  #listeners = new Set<(revision: number, events: Event[]) => void>();

  onWrite(listener: (revision: number, events: Event[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  readEvents(fromRevision: number, toRevision: number): Event[] {
    if (fromRevision < this.compactRevision) throw new MvccError('compacted');
    const out: Event[] = [];
    let i = this.#firstAtOrAfter(fromRevision);
    for (; i < this.#history.length; i++) {
      const ev = this.#history[i]!;
      if (ev.kv.modRevision > toRevision) break;
      out.push(ev);
    }
    return out;
  }

  /** Events of every revision in [from, to], ignoring compaction (the test's oracle). */
  allEvents(): readonly Event[] {
    return this.#history;
  }

  /** One revision holding all ops (deletes of missing keys do nothing); no revision if nothing changed. */
  write(ops: FakeOp[]): number {
    const rev = this.revision + 1;
    const events: Event[] = [];
    for (const op of ops) {
      const prev = this.#live.get(op.key);
      if ('delete' in op) {
        if (prev === undefined) continue;
        this.#live.delete(op.key);
        const kv: KeyValue = { key: utf8(op.key), createRevision: 0, modRevision: rev, version: 0, value: new Uint8Array(0), lease: 0n };
        events.push({ type: EventType.Delete, kv, prevKv: prev });
      } else {
        const kv: KeyValue = {
          key: utf8(op.key),
          createRevision: prev?.createRevision ?? rev,
          modRevision: rev,
          version: (prev?.version ?? 0) + 1,
          value: utf8(op.value),
          lease: 0n,
        };
        this.#live.set(op.key, kv);
        events.push(prev === undefined ? { type: EventType.Put, kv } : { type: EventType.Put, kv, prevKv: prev });
      }
    }
    if (events.length === 0) return this.revision;
    this.revision = rev;
    this.#history.push(...events);
    for (const l of this.#listeners) l(rev, events);
    return rev;
  }

  put(key: string, value: string): number {
    return this.write([{ key, value }]);
  }

  del(key: string): number {
    return this.write([{ key, delete: true }]);
  }

  compact(revision: number): void {
    if (revision > this.compactRevision) this.compactRevision = revision;
  }

  value(key: string): string | undefined {
    const kv = this.#live.get(key);
    return kv === undefined ? undefined : fromUtf8(kv.value);
  }

  #firstAtOrAfter(revision: number): number {
    let lo = 0;
    let hi = this.#history.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#history[mid]!.kv.modRevision < revision) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** What the watch tests drive: the fake above or the real KvStore behind the same methods. */
export interface TestStore extends WatchableStore {
  write(ops: FakeOp[]): number;
  put(key: string, value: string): number;
  del(key: string): number;
  compact(revision: number): void;
  /** Every event ever written, as onWrite delivered it (prevKv included): the oracle history. */
  allEvents(): readonly Event[];
}

/** The real KvStore on a MemoryBackend, driven like the fake; writes of several ops go through one txn. */
export class KvHarness implements TestStore {
  readonly store: KvStore;
  #history: Event[] = [];

  private constructor(store: KvStore) {
    this.store = store;
    store.onWrite((_, events) => void this.#history.push(...events));
  }

  static async open(): Promise<KvHarness> {
    return new KvHarness(await KvStore.open(new MemoryBackend()));
  }

  get revision(): number {
    return this.store.revision;
  }

  get compactRevision(): number {
    return this.store.compactRevision;
  }

  onWrite(listener: (revision: number, events: Event[]) => void): () => void {
    return this.store.onWrite(listener);
  }

  readEvents(fromRevision: number, toRevision: number): Event[] {
    return this.store.readEvents(fromRevision, toRevision);
  }

  allEvents(): readonly Event[] {
    return this.#history;
  }

  write(ops: FakeOp[]): number {
    const empty = new Uint8Array(0);
    const success: RequestOp[] = ops.map((op) =>
      'delete' in op
        ? { deleteRange: { key: utf8(op.key), rangeEnd: empty, prevKv: false } }
        : { put: { key: utf8(op.key), value: utf8(op.value), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false } },
    );
    return this.store.txn({ compare: [], success, failure: [] }).revision;
  }

  put(key: string, value: string): number {
    return this.write([{ key, value }]);
  }

  del(key: string): number {
    return this.write([{ key, delete: true }]);
  }

  compact(revision: number): void {
    if (revision > this.store.compactRevision && revision <= this.store.revision) this.store.compact(revision);
  }
}

export type StoreKind = 'fake' | 'kv';

export async function openTestStore(kind: StoreKind): Promise<TestStore> {
  return kind === 'fake' ? new FakeStore() : KvHarness.open();
}
