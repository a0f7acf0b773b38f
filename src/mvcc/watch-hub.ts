/**
 * The watch hub (etcd's watchable_store.go): feeds watchers from the store's writes and catches the ones
 * that are behind up from history.
 *
 * Every watcher is in one of two sets:
 *   - synced: it has seen everything up to the store's revision; each write is pushed to it at once;
 *   - unsynced: it needs history, from `minRevision` on: because it started at an old revision, or because
 *     its stream was full when a write came (etcd's "victim"). It is caught up from `store.readEvents`, whole
 *     revisions at a time, while its stream is writable, and rejoins the synced set on reaching the store's
 *     revision. If the revision it needs has been compacted meanwhile, it is canceled with compactRevision.
 *
 * The hub is synchronous and deterministic; it owns no timers. The driver calls:
 *   - `sync()` every ~100 ms (etcd's watchResyncPeriod) to catch up watchers whose catch-up did not finish
 *     within the budget of a create/resume;
 *   - `tickProgress()` every `watchProgressIntervalMs` (etcd: 10 min) for watchers created with progressNotify.
 *
 * Guarantees per watcher: events in revision order, no gaps, no duplicates; one revision's events in one
 * response (unless fragment=true and the response exceeds responseBytesMax); prevKv only when asked.
 */
import { assert, watchQueueResponsesMax, watchResponseBytesMax } from '../base/index.js';
import { MvccError, type Event } from './types.js';
import { cutBatch, fragmentResponse, projectEvents } from './watch-batch.js';
import { watcherMatches, WatcherGroup, type Watcher } from './watch-group.js';
import { WatchStream, type WatchStreamHost } from './watch-stream.js';
import { watchCancelReasons, watchResponse, type WatchableStore, type WatchSend } from './watch-types.js';

/** etcd: progressReportInterval = 10 minutes. */
export const watchProgressIntervalMs = 10 * 60 * 1000;
/** etcd: watchBatchMaxRevs; distinct revisions in one catch-up response. */
export const watchBatchRevisionsMax = 1000;
/** History windows read per catch-up pass; bounds the work of one create, resume or sync call. */
export const watchCatchUpBatchesMax = 16;

export interface WatchHubOptions {
  /** Responses a stream queues before its watchers stop being fed live (default watchQueueResponsesMax). */
  queueResponsesMax?: number;
  /** Distinct revisions in one catch-up response (default 1000, as etcd). */
  batchRevisionsMax?: number;
  /** Catch-up responses end at a revision boundary past this; fragment=true responses split past it. */
  responseBytesMax?: number;
  /** History windows one create/resume catch-up reads before leaving the rest to `sync()`. */
  catchUpBatchesMax?: number;
}

export class WatchHub {
  #store: WatchableStore;
  #synced = new WatcherGroup();
  #unsynced = new Set<Watcher>();
  #streams = new Set<WatchStream>();
  #progressWaiting = new Set<WatchStream>();
  #queueResponsesMax: number;
  #batchRevisionsMax: number;
  #responseBytesMax: number;
  #catchUpBatchesMax: number;
  #unsubscribe: () => void;
  #host: WatchStreamHost;
  /** The highest store revision the hub has seen: every synced watcher has had everything up to it. */
  #seenRevision: number;
  /** History read once per window within one catch-up pass, shared by watchers at the same revision. */
  #readCache = new Map<string, Event[]>();
  /** Registered watchers that asked for prevKv, whatever their state (a Set: register and unregister are idempotent). */
  readonly #prevKvWatchers = new Set<Watcher>();

  constructor(store: WatchableStore, options: WatchHubOptions = {}) {
    this.#store = store;
    this.#queueResponsesMax = positive(options.queueResponsesMax ?? watchQueueResponsesMax, 'queueResponsesMax');
    this.#batchRevisionsMax = positive(options.batchRevisionsMax ?? watchBatchRevisionsMax, 'batchRevisionsMax');
    this.#responseBytesMax = positive(options.responseBytesMax ?? watchResponseBytesMax, 'responseBytesMax');
    this.#catchUpBatchesMax = positive(options.catchUpBatchesMax ?? watchCatchUpBatchesMax, 'catchUpBatchesMax');
    this.#host = this.#makeHost();
    this.#seenRevision = store.revision;
    this.#unsubscribe = this.#subscribe();
  }

  /** Writes reach the hub with prevKv only while a registered watcher asked for it. */
  #subscribe(): () => void {
    return this.#store.onWrite((revision, events) => this.#notify(revision, events), { wantsPrevKv: () => this.#prevKvWatchers.size > 0 });
  }

  get streamCount(): number {
    return this.#streams.size;
  }

  get syncedCount(): number {
    return this.#synced.size;
  }

  /** Watchers behind the store (etcd_debugging_mvcc_slow_watcher_total). */
  get unsyncedCount(): number {
    return this.#unsynced.size;
  }

  openStream(send: WatchSend): WatchStream {
    const stream = new WatchStream(this.#host, send);
    this.#streams.add(stream);
    return stream;
  }

  /** Catch up unsynced watchers on writable streams, at most `batchesMax` history windows. Returns how many remain. */
  sync(batchesMax = this.#catchUpBatchesMax * 4): number {
    let budget = batchesMax;
    for (const w of [...this.#unsynced]) {
      if (budget <= 0) break;
      budget = this.#catchUpWatcher(w, budget);
      if (w.state === 'unsynced') {
        // Fairness: a watcher that used the budget goes to the back of the line.
        this.#unsynced.delete(w);
        this.#unsynced.add(w);
      }
    }
    this.#readCache.clear();
    this.#checkProgress();
    return this.#unsynced.size;
  }

  /** Periodic progress (etcd's progressTicker): a bookmark to each synced progressNotify watcher that got no event since the last tick. */
  tickProgress(): void {
    const revision = this.#store.revision;
    for (const stream of this.#streams) {
      for (const w of stream.watchers()) {
        if (!w.progressNotify) continue;
        if (w.progressDue && w.state === 'synced' && revision >= w.startRevision && !stream.full) {
          stream.deliver(watchResponse({ watchId: w.id, revision }));
        }
        w.progressDue = true;
      }
    }
  }

  /**
   * The store behind the hub's store object was replaced (a snapshot from the leader was installed): resubscribe
   * to its writes, and catch every synced watcher up from the new store's history, from just after the last
   * revision the hub saw (etcd's Restore moves synced watchers to unsynced). A watcher's stale minRevision is
   * raised to that point first, so a quiet watcher is not canceled for a compaction it did not need, and no
   * event goes back in time (etcd #15271).
   */
  restore(): void {
    this.#unsubscribe();
    this.#unsubscribe = this.#subscribe();
    for (const stream of this.#streams) {
      for (const w of stream.watchers()) {
        if (w.state !== 'synced') continue;
        this.#synced.delete(w);
        w.state = 'unsynced';
        w.minRevision = Math.max(w.minRevision, this.#seenRevision + 1);
        this.#unsynced.add(w);
      }
    }
    this.#seenRevision = Math.max(this.#seenRevision, this.#store.revision);
    for (const stream of [...this.#streams]) this.#host.catchUp(stream);
  }

  close(): void {
    this.#unsubscribe();
    for (const stream of [...this.#streams]) stream.close();
  }

  #makeHost(): WatchStreamHost {
    const hub = this;
    return {
      get revision() {
        return hub.#store.revision;
      },
      get queueResponsesMax() {
        return hub.#queueResponsesMax;
      },
      register: (w) => this.#register(w),
      unregister: (w) => {
        this.#prevKvWatchers.delete(w);
        if (w.state === 'synced') assert(this.#synced.delete(w), 'synced watcher missing from its group');
        else if (w.state === 'unsynced') assert(this.#unsynced.delete(w), 'unsynced watcher missing from its set');
      },
      catchUp: (stream) => {
        this.#catchUpStream(stream, this.#catchUpBatchesMax);
        this.#readCache.clear();
        this.#checkProgress();
      },
      progressPending: (stream) => {
        this.#progressWaiting.add(stream);
        this.#checkProgress();
      },
      streamClosed: (stream) => {
        this.#streams.delete(stream);
        this.#progressWaiting.delete(stream);
      },
    };
  }

  #register(w: Watcher): void {
    if (w.prevKv) this.#prevKvWatchers.add(w);
    const revision = this.#store.revision;
    this.#seenRevision = Math.max(this.#seenRevision, revision);
    if (w.startRevision === 0 || w.startRevision > revision) {
      w.minRevision = Math.max(revision + 1, w.startRevision);
      w.state = 'synced';
      this.#synced.add(w);
      return;
    }
    w.state = 'unsynced';
    this.#unsynced.add(w);
    this.#host.catchUp(w.stream);
  }

  /** One write revision, straight from the store: push it to every synced watcher it concerns. */
  #notify(revision: number, events: Event[]): void {
    this.#seenRevision = revision;
    if (this.#synced.size > 0) {
      const perWatcher = new Map<Watcher, Event[]>();
      for (const ev of events) {
        assert(ev.kv.modRevision === revision, 'write event revision differs from the write revision');
        this.#synced.forEachMatching(ev.kv.key, (w) => {
          const list = perWatcher.get(w);
          if (list === undefined) perWatcher.set(w, [ev]);
          else list.push(ev);
        });
      }
      for (const [w, evs] of perWatcher) this.#notifyWatcher(w, revision, evs);
    }
    if (this.#progressWaiting.size > 0) this.#checkProgress();
  }

  #notifyWatcher(w: Watcher, revision: number, evs: Event[]): void {
    // A send may have closed the stream or canceled watchers since the map was built.
    if (w.state !== 'synced' || revision < w.minRevision) return;
    const out = projectEvents(w, evs, false);
    if (out.length === 0) {
      w.minRevision = revision + 1;
      return;
    }
    if (w.stream.full) {
      // The victim path: stop feeding it; it will read this revision from history.
      this.#synced.delete(w);
      w.state = 'unsynced';
      w.minRevision = revision;
      this.#unsynced.add(w);
      return;
    }
    w.minRevision = revision + 1;
    this.#deliverEvents(w, out, revision);
  }

  #deliverEvents(w: Watcher, events: Event[], revision: number): void {
    w.progressDue = false;
    const response = watchResponse({ watchId: w.id, revision, events });
    if (!w.fragment) return w.stream.deliver(response);
    for (const piece of fragmentResponse(response, this.#responseBytesMax)) w.stream.deliver(piece);
  }

  #catchUpStream(stream: WatchStream, budget: number): number {
    for (const w of [...stream.watchers()]) {
      if (budget <= 0) break;
      budget = this.#catchUpWatcher(w, budget);
    }
    return budget;
  }

  #catchUpWatcher(w: Watcher, budget: number): number {
    while (budget > 0 && w.state === 'unsynced' && w.stream.writable && w.stream.queuedResponses === 0) {
      budget--;
      this.#catchUpBatch(w);
    }
    return budget;
  }

  /** Reads one history window for an unsynced watcher and sends what it holds for it (whole revisions). */
  #catchUpBatch(w: Watcher): void {
    const current = this.#store.revision;
    // etcd's chooseAll: compacted means strictly below the compact revision; the state at it is kept (each key's
    // latest revision ≤ it, tombstones aside), so a watch starting there streams it.
    if (w.minRevision < this.#store.compactRevision) return this.#cancelCompacted(w);
    if (w.minRevision > current) return this.#promote(w);
    const to = Math.min(current, w.minRevision + this.#batchRevisionsMax - 1);
    const events = this.#readEvents(w.minRevision, to);
    if (events === undefined) return this.#cancelCompacted(w);
    const mine = events.filter((ev) => ev.kv.modRevision >= w.minRevision && watcherMatches(w, ev.kv.key));
    const batch = cutBatch(mine, to, this.#batchRevisionsMax, this.#responseBytesMax);
    const out = projectEvents(w, batch.events, false);
    assert(batch.nextRevision > w.minRevision, 'catch-up made no progress');
    w.minRevision = batch.nextRevision;
    // etcd stamps catch-up responses with the current revision, so a stream's header revision never drops.
    if (out.length > 0) this.#deliverEvents(w, out, current);
    if (w.state === 'unsynced' && w.minRevision > current) this.#promote(w);
  }

  #readEvents(from: number, to: number): Event[] | undefined {
    const cacheKey = `${from}:${to}`;
    const cached = this.#readCache.get(cacheKey);
    if (cached !== undefined) return cached;
    try {
      const events = this.#store.readEvents(from, to);
      this.#readCache.set(cacheKey, events);
      return events;
    } catch (err) {
      if (err instanceof MvccError && err.code === 'compacted') return undefined;
      throw err;
    }
  }

  #promote(w: Watcher): void {
    assert(this.#unsynced.delete(w), 'promoting a watcher that is not unsynced');
    w.state = 'synced';
    this.#synced.add(w);
  }

  /** etcd: a watcher whose next revision is compacted gets canceled=true with compactRevision, then is gone. */
  #cancelCompacted(w: Watcher): void {
    const response = watchResponse({
      watchId: w.id,
      revision: this.#store.revision,
      canceled: true,
      compactRevision: this.#store.compactRevision,
      cancelReason: watchCancelReasons.compacted,
    });
    w.stream.deliver(response);
    w.stream.dropWatcher(w);
  }

  /** Answers RequestProgress on every waiting stream whose watchers are all synced and past their start. */
  #checkProgress(): void {
    if (this.#progressWaiting.size === 0) return;
    const revision = this.#store.revision;
    for (const stream of [...this.#progressWaiting]) {
      if (stream.closed || !stream.progressRequested) {
        this.#progressWaiting.delete(stream);
        continue;
      }
      let ready = true;
      for (const w of stream.watchers()) {
        if (w.state !== 'synced' || revision < w.startRevision) {
          ready = false;
          break;
        }
      }
      if (!ready) continue;
      this.#progressWaiting.delete(stream);
      stream.answerProgress(revision);
    }
  }
}

function positive(n: number, what: string): number {
  assert(Number.isSafeInteger(n) && n > 0, `${what} must be a positive integer, got ${n}`);
  return n;
}
