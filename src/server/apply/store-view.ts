/**
 * The watch hub outlives a Raft snapshot restore, which replaces the KV store object; the hub reads the store
 * through this view, which forwards to whichever store is current and keeps its write listeners attached.
 */
import type { KvStore } from '../../mvcc/kv-store.js';
import type { Event } from '../../mvcc/types.js';
import type { WatchableStore } from '../../mvcc/watch-types.js';

type Listener = (revision: number, events: Event[]) => void;

export class StoreView implements WatchableStore {
  #store: KvStore;
  #listeners = new Set<Listener>();
  #unsubscribe: () => void;

  constructor(store: KvStore) {
    this.#store = store;
    this.#unsubscribe = this.#subscribe();
  }

  #subscribe(): () => void {
    return this.#store.onWrite((revision, events) => {
      for (const l of this.#listeners) l(revision, events);
    });
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

  onWrite(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  readEvents(fromRevision: number, toRevision: number): Event[] {
    return this.#store.readEvents(fromRevision, toRevision);
  }
}
