/**
 * The in-process client of an embedded member: the same operations a gRPC client has, called directly on the
 * member's EtcdApi (no protobuf, no sockets). Keys and values may be strings (UTF-8) or bytes. The EtcdApi runs
 * etcd's request checks on every call (src/node/request/validate.ts), so bad requests fail here with the EtcdError a
 * gRPC client would get, before they reach Raft.
 *
 * Under auth a client needs a user, as a gRPC client does: `await member.client.authenticate('app', pw)` (or
 * `new EmbeddedClient(api, { user: { name, password } })`) gives a client that calls as that user and logs in
 * again when its token goes stale (embedded-login.ts). Without one, calls fail with etcd's
 * `etcdserver: user name is empty`.
 */
import { prefixEnd, utf8 } from '../base/bytes.js';
import type { DeleteRangeResponse, PutResponse, RangeRequest, RangeResponse, TxnRequest, TxnResponse } from '../mvcc/types.js';
import { rangeRequest } from './concurrency/recipes.js';
import type { WatchCreateRequest, WatchResponse } from '../mvcc/watch-types.js';
import { invalidWatchId, watchCreateRequest } from '../mvcc/watch-types.js';
import type { WatchStream } from '../node/api-types.js';
import type { EtcdApi, LeaseGrantResult, LeaseTimeToLiveResult, RequestContext } from '../node/server-api.js';
import { localSource } from './grpc/peer-source.js';
import { checkCredentials, clientError, Login, staleTokenCancelReason, type Credentials } from './embedded-login.js';

export type Bytes = string | Uint8Array;

const bytes = (b: Bytes): Uint8Array => (typeof b === 'string' ? utf8(b) : b);

function context(token: string | undefined): RequestContext {
  return { requireLeader: false, signal: new AbortController().signal, token, source: localSource };
}

export interface EmbeddedClientOptions {
  /** The user every call is made as under auth (etcd's clientv3 Username/Password). */
  user?: Credentials;
}

export interface WatchHandle {
  cancel(): void;
}

export class EmbeddedClient {
  readonly #api: EtcdApi;
  readonly #login: Login | undefined;

  constructor(api: EtcdApi, options: EmbeddedClientOptions = {}) {
    const { user, ...rest } = options;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw new TypeError(`EmbeddedClient: unknown option ${unknown[0]!}`);
    this.#api = api;
    this.#login = user === undefined ? undefined : new Login(api, checkCredentials(user));
  }

  /**
   * A client of the same member that calls as `name`: it logs in now (a wrong password rejects with etcd's
   * `etcdserver: authentication failed, invalid user ID or password`) and again whenever its token is refused
   * as stale. Auth still off is no error: the client logs in once auth asks for a user.
   */
  async authenticate(name: string, password: string): Promise<EmbeddedClient> {
    const client = new EmbeddedClient(this.#api, { user: { name, password } });
    await client.#login!.token();
    return client;
  }

  /** One call with the current token; refused for a stale one, a new login and one retry (clientv3's). */
  async #call<T>(op: (ctx: RequestContext) => Promise<T>): Promise<T> {
    const login = this.#login;
    const token = login === undefined ? undefined : await login.token();
    try {
      return await op(context(token));
    } catch (err) {
      const e = clientError(err);
      if (login === undefined || !login.isStale(e)) throw e;
      const fresh = await login.renew(token);
      return await op(context(fresh)).catch((again: unknown) => Promise.reject(clientError(again)));
    }
  }

  put(key: Bytes, value: Bytes, options: { lease?: bigint; prevKv?: boolean } = {}): Promise<PutResponse> {
    const req = { key: bytes(key), value: bytes(value), lease: options.lease ?? 0n, prevKv: options.prevKv ?? false, ignoreValue: false, ignoreLease: false };
    return this.#call((ctx) => this.#api.put(req, ctx));
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
    const r = rangeRequest(req.key, req);
    return this.#call((ctx) => this.#api.range(r, ctx));
  }

  delete(key: Bytes, options: { prefix?: boolean; prevKv?: boolean } = {}): Promise<DeleteRangeResponse> {
    const k = bytes(key);
    const req = { key: k, rangeEnd: options.prefix === true ? prefixEnd(k) : new Uint8Array(0), prevKv: options.prevKv ?? false };
    return this.#call((ctx) => this.#api.deleteRange(req, ctx));
  }

  txn(req: TxnRequest): Promise<TxnResponse> {
    return this.#call((ctx) => this.#api.txn(req, ctx));
  }

  /**
   * Watch a key (or a range/prefix through `rangeEnd`); responses arrive in order on `onResponse`. A create
   * refused for a stale token (a canceled create, as etcd answers it) is made again once after a new login;
   * `onResponse` sees only the second answer, or the refusal itself if the login fails.
   */
  watch(req: Partial<WatchCreateRequest> & { key: Uint8Array }, onResponse: (r: WatchResponse) => void): WatchHandle {
    const create = watchCreateRequest(req);
    const login = this.#login;
    let stream: WatchStream | undefined;
    let closed = false;
    const open = (token: string | undefined, retry: boolean): void => {
      if (closed) return;
      let first = true;
      const current = this.#api.openWatchStream({
        send: (r) => {
          const refusedAsStale = first && r.canceled && r.watchId === invalidWatchId && staleTokenCancelReason(r.cancelReason);
          first = false;
          if (!retry || login === undefined || !refusedAsStale) return void onResponse(r);
          current.close();
          login.renew(token).then((fresh) => open(fresh, false), () => onResponse(r));
        },
      }, context(token));
      stream = current;
      current.create(create);
    };
    open(login?.current, true);
    return {
      cancel: () => {
        closed = true;
        stream?.close();
      },
    };
  }

  leaseGrant(ttlSeconds: number, id = 0n): Promise<LeaseGrantResult> {
    return this.#call((ctx) => this.#api.leaseGrant({ ttlSeconds, id }, ctx));
  }

  leaseKeepAlive(id: bigint): Promise<number> {
    return this.#call((ctx) => this.#api.leaseKeepAlive(id, ctx));
  }

  leaseRevoke(id: bigint): Promise<{ revision: number }> {
    return this.#call((ctx) => this.#api.leaseRevoke(id, ctx));
  }

  leaseTimeToLive(id: bigint, keys = false): Promise<LeaseTimeToLiveResult> {
    return this.#call((ctx) => this.#api.leaseTimeToLive(id, keys, ctx));
  }
}
