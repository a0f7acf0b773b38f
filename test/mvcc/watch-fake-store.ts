/**
 * A minimal in-memory store with the WatchableStore contract, used to test the watch hub on its own and as the
 * reference history in the L4 test: every event ever written is kept (until compaction) in revision order.
 */
import { fromUtf8, utf8 } from '../../src/base/index.js';
import { EventType, MvccError, type Event, type KeyValue } from '../../src/mvcc/types.js';
import type { WatchableStore } from '../../src/mvcc/watch-types.js';

export type FakeOp = { key: string; value: string } | { key: string; delete: true };

export class FakeStore implements WatchableStore {
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
    if (fromRevision <= this.compactRevision) throw new MvccError('compacted');
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
