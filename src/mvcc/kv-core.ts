/**
 * The MVCC state that answers reads: the key tree (every key's revisions since the last compaction) and the
 * history list (the same entries in revision order, for watch catch-up, hashing and compaction). Pure and
 * synchronous: writes also go to the shared WriteBuffer, which the store flushes to the backend behind.
 * Internal to src/mvcc; the public face is KvStore.
 */
import { assert, assertSafeInteger } from '../base/assert.js';
import type { WriteBuffer } from './backend.js';
import { encodeKeyValue } from './kv-codec.js';
import type { HistoryEntry } from './key-index.js';
import { KeyTree } from './key-tree.js';
import type { LeaseHooks } from './lease-hooks.js';
import { revisionToBytes } from './revision.js';
import { EventType, type Event, type KeyValue } from './types.js';

export type WriteListener = (revision: number, events: Event[]) => void;

const empty = new Uint8Array(0);

export function storedKeyValue(entry: HistoryEntry): Uint8Array {
  // etcd stores a tombstone as KeyValue{Key} only; the event's modRevision is added when it is read.
  return encodeKeyValue(entry.tombstone ? { ...entry.kv, modRevision: 0 } : entry.kv);
}

export function tombstoneKv(key: Uint8Array, main: number): KeyValue {
  return { key, createRevision: 0, modRevision: main, version: 0, value: empty, lease: 0n };
}

export class MvccCore {
  readonly tree = new KeyTree();
  /** Every entry since the last compaction plus the entries compaction kept, in (main, sub) order. */
  history: HistoryEntry[] = [];
  /** The revision of the last write (1 for a fresh store, as etcd). */
  currentRev = 1;
  /** -1 until the first compaction (etcd's compactMainRev). */
  compactRev = -1;
  hooks: LeaseHooks | undefined;
  readonly listeners = new Set<WriteListener>();
  readonly buffer: WriteBuffer;
  /** Sum of stored key+value bytes in the history (a deterministic size estimate). */
  historyBytes = 0;

  constructor(buffer: WriteBuffer) {
    this.buffer = buffer;
  }

  /** Add an entry read from the backend at open (in backend, i.e. revision, order). */
  load(entry: HistoryEntry, storedBytes: number): void {
    this.tree.getOrCreate(entry.kv.key).append(entry);
    this.history.push(entry);
    this.historyBytes += storedBytes;
    if (entry.main > this.currentRev) this.currentRev = entry.main;
  }

  /**
   * Live entries at atRev: a single key when `end` is undefined, else [key, end) with an empty end meaning
   * "no upper bound". Collects at most `limit` entries (0: all) and counts them all (etcd's Revisions()).
   */
  rangeEntries(key: Uint8Array, end: Uint8Array | undefined, atRev: number, limit: number): { entries: HistoryEntry[]; total: number } {
    if (end === undefined) {
      const e = this.tree.get(key)?.get(atRev);
      return e === undefined ? { entries: [], total: 0 } : { entries: [e], total: 1 };
    }
    const entries: HistoryEntry[] = [];
    let total = 0;
    this.tree.visit(key, end, (ki) => {
      const e = ki.get(atRev);
      if (e !== undefined) {
        if (limit <= 0 || entries.length < limit) entries.push(e);
        total++;
      }
      return true;
    });
    return { entries, total };
  }

  beginWrite(): WriteTxn {
    return new WriteTxn(this);
  }
}

/** One write request (a Put, DeleteRange or whole Txn): all its changes share main = beginRev + 1. */
export class WriteTxn {
  readonly #core: MvccCore;
  readonly beginRev: number;
  readonly #events: Event[] = [];
  #ended = false;

  constructor(core: MvccCore) {
    this.#core = core;
    this.beginRev = core.currentRev;
  }

  get changes(): number {
    return this.#events.length;
  }

  /** The revision reads inside this write see (etcd: beginRev, +1 once something changed). */
  get readRev(): number {
    return this.#events.length > 0 ? this.beginRev + 1 : this.beginRev;
  }

  #record(entry: HistoryEntry, event: Event): void {
    const core = this.#core;
    const stored = storedKeyValue(entry);
    const revKey = revisionToBytes(entry, entry.tombstone);
    core.buffer.put('key', revKey, stored);
    core.historyBytes += revKey.length + stored.length;
    core.history.push(entry);
    this.#events.push(event);
  }

  put(key: Uint8Array, value: Uint8Array, lease: bigint): void {
    assert(!this.#ended, 'write after end');
    const core = this.#core;
    const main = this.beginRev + 1;
    const ki = core.tree.get(key) ?? core.tree.getOrCreate(key.slice());
    const prev = ki.current();
    const kv: KeyValue = {
      key: ki.key,
      createRevision: prev === undefined ? main : prev.kv.createRevision,
      modRevision: main,
      version: prev === undefined ? 1 : prev.kv.version + 1,
      value: value.slice(),
      lease,
    };
    const entry: HistoryEntry = { main, sub: this.#events.length, tombstone: false, kv };
    ki.append(entry);
    this.#record(entry, prev === undefined ? { type: EventType.Put, kv } : { type: EventType.Put, kv, prevKv: prev.kv });
    if (prev !== undefined && prev.kv.lease !== 0n) core.hooks?.detach(prev.kv.lease, ki.key);
    if (lease !== 0n) core.hooks?.attach(lease, ki.key);
  }

  /** Delete every live key in the range (end as in rangeEntries); returns how many. */
  deleteRange(key: Uint8Array, end: Uint8Array | undefined): number {
    assert(!this.#ended, 'write after end');
    const { entries } = this.#core.rangeEntries(key, end, this.readRev, 0);
    for (const prev of entries) this.#delete(prev);
    return entries.length;
  }

  #delete(prev: HistoryEntry): void {
    const core = this.#core;
    const main = this.beginRev + 1;
    const ki = core.tree.get(prev.kv.key);
    assert(ki !== undefined && ki.current() === prev, 'deleting a key that is not live');
    const entry: HistoryEntry = { main, sub: this.#events.length, tombstone: true, kv: tombstoneKv(ki.key, main) };
    ki.append(entry);
    this.#record(entry, { type: EventType.Delete, kv: entry.kv, prevKv: prev.kv });
    if (prev.kv.lease !== 0n) core.hooks?.detach(prev.kv.lease, ki.key);
  }

  /** Publish the revision (when something changed) and notify listeners synchronously. */
  end(): number {
    assert(!this.#ended, 'write ended twice');
    this.#ended = true;
    if (this.#events.length === 0) return this.beginRev;
    const core = this.#core;
    assert(core.currentRev === this.beginRev, 'concurrent writes');
    core.currentRev = this.beginRev + 1;
    assertSafeInteger(core.currentRev, 'revision');
    for (const listener of core.listeners) listener(core.currentRev, this.#events);
    return core.currentRev;
  }
}
