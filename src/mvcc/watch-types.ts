/**
 * Watch vocabulary, shaped like etcd's WatchCreateRequest / WatchResponse (etcdserverpb), camelCase, so the
 * gRPC layer maps fields 1:1. Watch ids follow etcd 3.5: per stream, `watchId = 0` asks the server to pick
 * (ids 0, 1, 2, … skipping ids in use); any other value is the client's choice and must be unused.
 */
import type { Event } from './types.js';

/** etcd's WatchCreateRequest.FilterType. */
export const WatchFilterType = { NoPut: 0, NoDelete: 1 } as const;
export type WatchFilterType = (typeof WatchFilterType)[keyof typeof WatchFilterType];

export interface WatchCreateRequest {
  /** Empty means "\0", the smallest key (as etcd). */
  key: Uint8Array;
  /** Empty: the single key. "\0": every key ≥ key. Otherwise [key, rangeEnd). */
  rangeEnd: Uint8Array;
  /** 0: from the next revision. Negative: refused as compacted (etcd). */
  startRevision: number;
  progressNotify: boolean;
  filters: WatchFilterType[];
  prevKv: boolean;
  /** 0 (autoWatchId): the server assigns one. */
  watchId: number;
  fragment: boolean;
}

export interface WatchResponse {
  /** invalidWatchId (-1) for a refused create and for a stream-wide progress notification. */
  watchId: number;
  created: boolean;
  canceled: boolean;
  /** Non-zero only when the watcher was canceled because its next revision was compacted. */
  compactRevision: number;
  cancelReason: string;
  /** True on every fragment of a split response but the last. */
  fragment: boolean;
  events: Event[];
  /** header.revision: the store revision this response speaks for. */
  revision: number;
}

export const autoWatchId = 0;
export const invalidWatchId = -1;

/** Exact strings etcd puts in cancel_reason; clients match on them. */
export const watchCancelReasons = {
  compacted: 'etcdserver: mvcc: required revision has been compacted',
  duplicateId: 'mvcc: duplicate watch ID provided on the WatchStream',
  emptyRange: 'mvcc: watcher range is empty',
} as const;

/**
 * How a stream hands a response to its transport. Like Node's `Writable.write`: return false when the transport
 * would rather not take more now; the stream then queues (bounded) until `WatchStream.resume()` is called
 * (on the transport's 'drain'). Returning nothing counts as true.
 */
export type WatchSend = (response: WatchResponse) => boolean | void;

export interface WriteListenOptions {
  /**
   * Whether this listener needs the previous KeyValue on the events of the coming write. Asked once per put
   * or delete: reading it costs a value read, which etcd too makes only when a watcher asked for prev_kv.
   */
  wantsPrevKv?: () => boolean;
}

/** The part of the KV store the watch hub relies on (KvStore implements it). */
export interface WatchableStore {
  readonly revision: number;
  readonly compactRevision: number;
  /**
   * Synchronous, after each write revision, with all its events in order (prevKv set when the key existed and
   * some listener's `wantsPrevKv` says so; a listener without one always wants it).
   */
  onWrite(listener: (revision: number, events: Event[]) => void, options?: WriteListenOptions): () => void;
  /** Events with revision in [from, to], prevKv set; throws MvccError('compacted') when from < compactRevision. */
  readEvents(fromRevision: number, toRevision: number): Event[];
}

/** A request with every field at its default, for callers that set a few. */
export function watchCreateRequest(fields: Partial<WatchCreateRequest> & { key: Uint8Array }): WatchCreateRequest {
  return {
    rangeEnd: new Uint8Array(0),
    startRevision: 0,
    progressNotify: false,
    filters: [],
    prevKv: false,
    watchId: autoWatchId,
    fragment: false,
    ...fields,
  };
}

export function watchResponse(fields: Partial<WatchResponse> & { watchId: number; revision: number }): WatchResponse {
  return {
    created: false,
    canceled: false,
    compactRevision: 0,
    cancelReason: '',
    fragment: false,
    events: [],
    ...fields,
  };
}
