/**
 * The MVCC state that answers reads: the key tree (every key's revisions since the last compaction, as
 * codes), the revision log (the same revisions in revision order, for watch catch-up, hashing and
 * compaction) and the value store (values live in the backend; see value-store.ts). Synchronous: writes go
 * to the shared WriteBuffer, which the store flushes to the backend behind, and to the value store's overlay
 * until then. Internal to src/mvcc; the public face is KvStore.
 */
import { assert, assertSafeInteger } from '../base/assert.js';
import { ownedCopy } from '../base/bytes.js';
import type { WriteBuffer } from './backend.js';
import type { KeyIndex } from './key-index.js';
import { KeyTree } from './key-tree.js';
import type { LeaseHooks } from './lease-hooks.js';
import { codeIsTombstone, codeMain, codeToBytes, revCode } from './rev-code.js';
import { RevisionLog } from './revision-log.js';
import { storedKeyValue, tombstoneKv, type ValueStore } from './value-store.js';
import { EventType, type Event, type KeyValue } from './types.js';

export { tombstoneKv };

export type WriteListener = (revision: number, events: Event[]) => void;

/** One key's revision found by a range: its index and the revision's code. */
export interface Hit {
  readonly ki: KeyIndex;
  readonly code: number;
}

const empty = new Uint8Array(0);

export class MvccCore {
  readonly tree = new KeyTree();
  /** Every revision since the last compaction plus the ones compaction kept, in revision order. */
  readonly log = new RevisionLog();
  /** The revision of the last write (1 for a fresh store, as etcd). */
  currentRev = 1;
  /** -1 until the first compaction (etcd's compactMainRev). */
  compactRev = -1;
  hooks: LeaseHooks | undefined;
  /** Each write listener with whether it needs prevKv on the events (see WriteListenOptions). */
  readonly listeners = new Map<WriteListener, () => boolean>();
  readonly buffer: WriteBuffer;
  readonly values: ValueStore;
  /** The highest revision code written (what a flush covers). */
  lastCode = 0;

  constructor(buffer: WriteBuffer, values: ValueStore) {
    this.buffer = buffer;
    this.values = values;
  }

  /** Whether a write's events carry prevKv: only when a listener will use it (a value read saved per write otherwise). */
  wantsPrevKv(): boolean {
    for (const wants of this.listeners.values()) if (wants()) return true;
    return false;
  }

  /** Add a revision read from the backend at open (in revision order); kv is only looked at, not kept. */
  load(code: number, tombstone: boolean, kv: KeyValue): void {
    const ki = this.tree.getOrCreate(kv.key);
    ki.append(code, tombstone ? undefined : kv);
    this.log.push(code);
    this.lastCode = code;
    const main = codeMain(code);
    if (main > this.currentRev) this.currentRev = main;
  }

  /**
   * Live revisions at atRev: a single key when `end` is undefined, else [key, end) with an empty end meaning
   * "no upper bound". Collects at most `limit` hits (0: all) and counts them all (etcd's Revisions()).
   */
  rangeEntries(key: Uint8Array, end: Uint8Array | undefined, atRev: number, limit: number): { hits: Hit[]; total: number } {
    if (end === undefined) {
      const ki = this.tree.get(key);
      const code = ki?.get(atRev);
      return code === undefined ? { hits: [], total: 0 } : { hits: [{ ki: ki!, code }], total: 1 };
    }
    const hits: Hit[] = [];
    let total = 0;
    this.tree.visit(key, end, (ki) => {
      const code = ki.get(atRev);
      if (code !== undefined) {
        if (limit <= 0 || hits.length < limit) hits.push({ ki, code });
        total++;
      }
      return true;
    });
    return { hits, total };
  }

  /** The whole KeyValue of a hit (the value read from the overlay, the cache or the backend). */
  kvOf(hit: Hit): KeyValue {
    // The key's bytes are made from the index only for a tombstone (the value store reads a put's key whole).
    return this.values.read(hit.code, codeIsTombstone(hit.code) ? hit.ki.key : undefined);
  }

  /**
   * The KeyValue of a hit without its value: from the index when the hit is the key's current revision
   * (no backend read), else read whole and stripped.
   */
  metaOf(hit: Hit): KeyValue {
    const { ki, code } = hit;
    if (ki.current() === code) {
      return { key: ki.key, createRevision: ki.createRevision, modRevision: codeMain(code), version: ki.version, value: empty, lease: ki.lease };
    }
    return { ...this.kvOf(hit), value: empty };
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

  #record(code: number, kv: KeyValue, event: Event): void {
    const core = this.#core;
    const stored = storedKeyValue(code, kv);
    core.buffer.put('key', codeToBytes(code), stored);
    core.values.written(code, stored);
    core.log.push(code);
    core.lastCode = code;
    this.#events.push(event);
  }

  put(key: Uint8Array, value: Uint8Array, lease: bigint): void {
    assert(!this.#ended, 'write after end');
    const core = this.#core;
    const main = this.beginRev + 1;
    const ki = core.tree.getOrCreate(key);
    // Owned: the event's kv may wait in a watcher's queue, and `key` may be a view into a request's buffer.
    const keyBytes = ownedCopy(key);
    const prevCode = ki.current();
    // Watchers that asked for prev_kv need the previous value: one point read, usually from the cache or the
    // memtable, made only when one listens (a put's own prev_kv is read by txn.ts before the write).
    const prevKv = prevCode === undefined || !core.wantsPrevKv() ? undefined : core.values.read(prevCode);
    const prevLease = ki.lease;
    const kv: KeyValue = {
      key: keyBytes,
      createRevision: prevCode === undefined ? main : ki.createRevision,
      modRevision: main,
      version: prevCode === undefined ? 1 : ki.version + 1,
      // Not copied: the stored encoding below is the copy that lives on (the event kv is transient).
      value,
      lease,
    };
    const code = revCode(main, this.#events.length, false);
    ki.append(code, kv);
    this.#record(code, kv, prevKv === undefined ? { type: EventType.Put, kv } : { type: EventType.Put, kv, prevKv });
    if (prevCode !== undefined && prevLease !== 0n) core.hooks?.detach(prevLease, keyBytes);
    if (lease !== 0n) core.hooks?.attach(lease, keyBytes);
  }

  /** Delete every live key in the range (end as in rangeEntries); returns how many. */
  deleteRange(key: Uint8Array, end: Uint8Array | undefined): number {
    assert(!this.#ended, 'write after end');
    const { hits } = this.#core.rangeEntries(key, end, this.readRev, 0);
    for (const hit of hits) this.#delete(hit);
    return hits.length;
  }

  #delete(hit: Hit): void {
    const core = this.#core;
    const { ki } = hit;
    assert(ki.current() === hit.code, 'deleting a key that is not live');
    const main = this.beginRev + 1;
    const prevKv = core.wantsPrevKv() ? core.kvOf(hit) : undefined;
    const prevLease = ki.lease;
    const code = revCode(main, this.#events.length, true);
    const kv = tombstoneKv(ki.key, main);
    ki.append(code);
    this.#record(code, kv, prevKv === undefined ? { type: EventType.Delete, kv } : { type: EventType.Delete, kv, prevKv });
    if (prevLease !== 0n) core.hooks?.detach(prevLease, kv.key);
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
    for (const listener of core.listeners.keys()) listener(core.currentRev, this.#events);
    return core.currentRev;
  }
}
