/**
 * One client watch stream (one gRPC Watch call): its watchers, and the ordered, bounded queue of responses
 * between the hub and the transport.
 *
 * Delivery contract for the transport:
 *   - responses are pushed through `send`, in order; `send` returns false (like Node's `write`) when the
 *     transport wants no more for now; the stream then queues, and the transport calls `resume()` on 'drain';
 *   - while the queue holds `queueResponsesMax` responses, live events for this stream's watchers are not
 *     queued: those watchers leave the synced group and are caught up from history later (after `resume()`,
 *     or by `WatchHub.sync()`), so a slow client never blocks writes or other watchers;
 *   - control responses (created, canceled, progress) are always queued; a transport should stop reading
 *     requests while `queuedResponses` is large (etcd's recvLoop blocks on its 128-slot control channel).
 */
import { assert, compareBytes } from '../base/index.js';
import {
  autoWatchId,
  invalidWatchId,
  watchCancelReasons,
  WatchFilterType,
  watchResponse,
  type WatchCreateRequest,
  type WatchResponse,
  type WatchSend,
} from './watch-types.js';

/** A watcher belongs to one stream (its `stream`); the hub keeps it in the synced or unsynced group (watch-group.ts). */
/** pending: created on its stream, not yet registered with the hub (its created response is being sent). */
export type WatcherState = 'pending' | 'synced' | 'unsynced' | 'closed';

export interface Watcher {
  readonly id: number;
  readonly stream: WatchStream;
  readonly key: Uint8Array;
  /** null: the single key. Empty: every key ≥ key. Otherwise the exclusive end. */
  readonly end: Uint8Array | null;
  readonly startRevision: number;
  readonly prevKv: boolean;
  readonly fragment: boolean;
  readonly progressNotify: boolean;
  readonly noPut: boolean;
  readonly noDelete: boolean;
  /**
   * The next revision this watcher needs. Every event with a smaller revision has been delivered (or
   * filtered out). While synced it may lag the store (only matching writes move it); it is exact whenever the
   * watcher leaves the synced group.
   */
  minRevision: number;
  state: WatcherState;
  /** etcd's sws.progress[id]: no event was sent since the last periodic progress tick. */
  progressDue: boolean;
}

/** What a stream needs from its hub; the hub hands a private implementation to each stream. */
export interface WatchStreamHost {
  readonly revision: number;
  readonly queueResponsesMax: number;
  /** Put a new watcher in the synced or unsynced set, and catch it up if needed. */
  register(w: Watcher): void;
  unregister(w: Watcher): void;
  /** Catch this stream's unsynced watchers up, within a budget, while it is writable. */
  catchUp(stream: WatchStream): void;
  /** Note that the stream waits for a progress answer (checked after writes and catch-up). */
  progressPending(stream: WatchStream): void;
  streamClosed(stream: WatchStream): void;
}

export class WatchStream {
  #host: WatchStreamHost;
  #send: WatchSend;
  #watchers = new Map<number, Watcher>();
  /**
   * Ids of watchers the hub canceled for compaction. etcd keeps such a watcher in its stream until the client
   * cancels it: the id stays taken, and a cancel of it is still answered canceled=true.
   */
  #compactedIds = new Set<number>();
  #nextId = 0;
  #queue: WatchResponse[] = [];
  #writable = true;
  #flushing = false;
  #closed = false;
  #progressRequested = false;

  constructor(host: WatchStreamHost, send: WatchSend) {
    this.#host = host;
    this.#send = send;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get queuedResponses(): number {
    return this.#queue.length;
  }

  /** True while the transport takes responses directly (nothing queued behind it). */
  get writable(): boolean {
    return this.#writable && !this.#closed;
  }

  /** True when live events must not be queued: the watcher becomes unsynced instead. */
  get full(): boolean {
    return this.#queue.length >= this.#host.queueResponsesMax;
  }

  get progressRequested(): boolean {
    return this.#progressRequested;
  }

  watchers(): IterableIterator<Watcher> {
    return this.#watchers.values();
  }

  /** Answers through `send`: created=true with the id, or created+canceled with watchId -1 (etcd 3.5). */
  create(req: WatchCreateRequest): void {
    if (this.#closed) return;
    const revision = this.#host.revision;
    const refuse = (cancelReason: string): void =>
      this.deliver(watchResponse({ watchId: invalidWatchId, revision, created: true, canceled: true, cancelReason }));
    const key = req.key.length === 0 ? new Uint8Array([0]) : req.key;
    const end = req.rangeEnd.length === 0 ? null : req.rangeEnd.length === 1 && req.rangeEnd[0] === 0 ? new Uint8Array(0) : req.rangeEnd;
    if (req.startRevision < 0) return refuse(watchCancelReasons.compacted);
    if (end !== null && end.length > 0 && compareBytes(key, end) >= 0) return refuse(watchCancelReasons.emptyRange);
    let id = req.watchId;
    if (id === autoWatchId) {
      while (this.#watchers.has(this.#nextId) || this.#compactedIds.has(this.#nextId)) this.#nextId++;
      id = this.#nextId++;
    } else if (this.#watchers.has(id) || this.#compactedIds.has(id)) {
      return refuse(watchCancelReasons.duplicateId);
    }
    const w: Watcher = {
      id,
      stream: this,
      key,
      end,
      startRevision: req.startRevision,
      prevKv: req.prevKv,
      fragment: req.fragment,
      progressNotify: req.progressNotify,
      noPut: req.filters.includes(WatchFilterType.NoPut),
      noDelete: req.filters.includes(WatchFilterType.NoDelete),
      minRevision: req.startRevision,
      state: 'pending',
      progressDue: true,
    };
    this.#watchers.set(id, w);
    this.deliver(watchResponse({ watchId: id, revision, created: true }));
    // The send may have closed the stream (the client went away; fuzz case 2286275534): the watcher left with
    // it, and registering it now would leave it in the hub for good.
    if (w.state === 'closed') return;
    this.#host.register(w);
  }

  /** etcd answers a known id with canceled=true and says nothing for an unknown one. Returns whether known. */
  cancel(watchId: number): boolean {
    const w = this.#watchers.get(watchId);
    if (this.#closed) return false;
    if (w === undefined) {
      if (!this.#compactedIds.delete(watchId)) return false;
    } else {
      this.#remove(w);
    }
    this.deliver(watchResponse({ watchId, revision: this.#host.revision, canceled: true }));
    return true;
  }

  /**
   * RequestProgress: answered with watchId -1 and the store revision once every watcher on the stream is
   * synced and past its start revision, so the revision is a true bookmark (etcd #15220). etcd drops a request
   * made while watchers are behind; we defer it instead. With no watchers, etcd answers nothing; neither do we.
   */
  requestProgress(): void {
    if (this.#closed || this.#watchers.size === 0) return;
    this.#progressRequested = true;
    this.#host.progressPending(this);
  }

  /** Called by the hub when every watcher has caught up. */
  answerProgress(revision: number): void {
    assert(this.#progressRequested, 'progress answered without a request');
    this.#progressRequested = false;
    if (this.#watchers.size === 0) return;
    this.deliver(watchResponse({ watchId: invalidWatchId, revision }));
  }

  /** The transport drained: flush the queue, then catch up watchers that fell behind. */
  resume(): void {
    if (this.#closed) return;
    this.#writable = true;
    this.#flush();
    if (this.writable && this.#queue.length === 0) this.#host.catchUp(this);
  }

  close(): void {
    if (this.#closed) return;
    for (const w of [...this.#watchers.values()]) this.#remove(w);
    this.#closed = true;
    this.#queue = [];
    this.#progressRequested = false;
    this.#host.streamClosed(this);
  }

  /** Hub side: remove a watcher the hub canceled itself (compaction), after queueing its last response. */
  dropWatcher(w: Watcher): void {
    if (this.#watchers.get(w.id) !== w) return;
    this.#remove(w);
    this.#compactedIds.add(w.id);
  }

  /** Hub side: hand a response to the transport or queue it (the caller checks `full` for live events). */
  deliver(response: WatchResponse): void {
    if (this.#closed) return;
    this.#queue.push(response);
    this.#flush();
  }

  /** Reentrancy-safe: a `send` that calls back into the stream only queues; the outer loop sends in order. */
  #flush(): void {
    if (this.#flushing) return;
    this.#flushing = true;
    try {
      while (this.#writable && this.#queue.length > 0 && !this.#closed) {
        this.#writable = this.#send(this.#queue.shift()!) !== false;
      }
    } finally {
      this.#flushing = false;
    }
  }

  #remove(w: Watcher): void {
    this.#watchers.delete(w.id);
    this.#host.unregister(w);
    w.state = 'closed';
  }
}
