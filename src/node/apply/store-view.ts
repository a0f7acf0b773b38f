/**
 * The watch hub outlives a Raft snapshot restore, which replaces the KV store object; the hub reads the store
 * through this view, which forwards to whichever store is current and keeps its write listeners attached.
 */
import type { KvStore } from '../../mvcc/kv-store.js';
import type { Event } from '../../mvcc/types.js';
import type { WatchableStore, WriteListenOptions } from '../../mvcc/watch-types.js';

type Listener = (revision: number, events: Event[]) => void;

export class StoreView implements WatchableStore {
  #store: KvStore;
  /** Each listener with whether it wants prevKv (a listener without the option always does). */
  #listeners = new Map<Listener, () => boolean>();
  #unsubscribe: () => void;

  constructor(store: KvStore) {
    this.#store = store;
    this.#unsubscribe = this.#subscribe();
  }

  #subscribe(): () => void {
    return this.#store.onWrite(
      (revision, events) => {
        for (const l of this.#listeners.keys()) l(revision, events);
      },
      { wantsPrevKv: () => this.#wantsPrevKv() },
    );
  }

  #wantsPrevKv(): boolean {
    for (const wants of this.#listeners.values()) if (wants()) return true;
    return false;
  }

  rebind(store: KvStore): void {
    if (store === this.#store) return;
    this.#unsubscribe();
    this.#store = store;
    this.#unsubscribe = this.#subscribe();
  }

  get revision(): number {
    return this.#store.revision;
  }

  get compactRevision(): number {
    return this.#store.compactRevision;
  }

  onWrite(listener: Listener, options: WriteListenOptions = {}): () => void {
    const wantsPrevKv = options.wantsPrevKv;
    this.#listeners.set(listener, () => wantsPrevKv?.() ?? true);
    return () => this.#listeners.delete(listener);
  }

  readEvents(fromRevision: number, toRevision: number): Event[] {
    return this.#store.readEvents(fromRevision, toRevision);
  }
}
