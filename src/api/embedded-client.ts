/**
 * The in-process client of an embedded member: the same operations a gRPC client has, called directly on the
 * member's EtcdApi (no protobuf, no sockets). Keys and values may be strings (UTF-8) or bytes. The EtcdApi runs
 * etcd's request checks on every call (src/node/request/validate.ts), so bad requests fail here with the EtcdError a
 * gRPC client would get, before they reach Raft.
 */
import { prefixEnd, utf8 } from '../base/bytes.js';
import type { DeleteRangeResponse, PutResponse, RangeRequest, RangeResponse, TxnRequest, TxnResponse } from '../mvcc/types.js';
import { rangeRequest } from './concurrency/recipes.js';
import type { WatchCreateRequest, WatchResponse } from '../mvcc/watch-types.js';
import { watchCreateRequest } from '../mvcc/watch-types.js';
import type { EtcdApi, LeaseGrantResult, LeaseTimeToLiveResult, RequestContext } from '../node/server-api.js';

export type Bytes = string | Uint8Array;

const bytes = (b: Bytes): Uint8Array => (typeof b === 'string' ? utf8(b) : b);

function context(signal?: AbortSignal): RequestContext {
  return { requireLeader: false, signal: signal ?? new AbortController().signal };
}

export interface WatchHandle {
  cancel(): void;
}

export class EmbeddedClient {
  readonly #api: EtcdApi;

  constructor(api: EtcdApi) {
    this.#api = api;
  }

  put(key: Bytes, value: Bytes, options: { lease?: bigint; prevKv?: boolean } = {}): Promise<PutResponse> {
    return this.#api.put(
      { key: bytes(key), value: bytes(value), lease: options.lease ?? 0n, prevKv: options.prevKv ?? false, ignoreValue: false, ignoreLease: false },
      context(),
    );
  }

  /** A single key, or every key under it with `prefix`. Linearizable unless `serializable`. */
  get(key: Bytes, options: { prefix?: boolean; serializable?: boolean; revision?: number; limit?: number } = {}): Promise<RangeResponse> {
    const k = bytes(key);
    return this.range({
      key: k,
      rangeEnd: options.prefix === true ? prefixEnd(k) : new Uint8Array(0),
      serializable: options.serializable ?? false,
      revision: options.revision ?? 0,
      limit: options.limit ?? 0,
    });
  }

  range(req: Partial<RangeRequest> & { key: Uint8Array }): Promise<RangeResponse> {
    return this.#api.range(rangeRequest(req.key, req), context());
  }

  delete(key: Bytes, options: { prefix?: boolean; prevKv?: boolean } = {}): Promise<DeleteRangeResponse> {
    const k = bytes(key);
    return this.#api.deleteRange(
      { key: k, rangeEnd: options.prefix === true ? prefixEnd(k) : new Uint8Array(0), prevKv: options.prevKv ?? false },
      context(),
    );
  }

  txn(req: TxnRequest): Promise<TxnResponse> {
    return this.#api.txn(req, context());
  }

  /** Watch a key (or a range/prefix through `rangeEnd`); responses arrive in order on `onResponse`. */
  watch(req: Partial<WatchCreateRequest> & { key: Uint8Array }, onResponse: (r: WatchResponse) => void): WatchHandle {
    const stream = this.#api.openWatchStream({ send: (r) => void onResponse(r) }, context());
    stream.create(watchCreateRequest(req));
    return { cancel: () => stream.close() };
  }

  leaseGrant(ttlSeconds: number, id = 0n): Promise<LeaseGrantResult> {
    return this.#api.leaseGrant({ ttlSeconds, id }, context());
  }

  leaseKeepAlive(id: bigint): Promise<number> {
    return this.#api.leaseKeepAlive(id, context());
  }

  leaseRevoke(id: bigint): Promise<{ revision: number }> {
    return this.#api.leaseRevoke(id, context());
  }

  leaseTimeToLive(id: bigint, keys = false): Promise<LeaseTimeToLiveResult> {
    return this.#api.leaseTimeToLive(id, keys, context());
  }
}
