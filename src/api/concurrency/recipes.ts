/**
 * The building blocks of etcd's client/v3/concurrency package, run inside the server on the EtcdApi (as etcd's
 * v3lock and v3election services run them on an in-process client): a contender is a key `<prefix><lease hex>`
 * attached to its lease; contenders are ordered by create revision; the oldest holds the lock (or leads); the
 * others each wait for the deletion of the key created just before their own.
 */
import { prefixEnd, utf8 } from '../../base/bytes.js';
import type { EtcdApi, RequestContext } from '../../node/server-api.js';
import { assert } from '../../base/assert.js';
import { CompareResult, CompareTarget, EventType, SortOrder, SortTarget } from '../../mvcc/types.js';
import type { RangeRequest, RangeResponse, TxnRequest } from '../../mvcc/types.js';
import { watchCreateRequest } from '../../mvcc/watch-types.js';
import type { WatchResponse } from '../../mvcc/watch-types.js';

/** concurrency.defaultSessionTTL: the lease etcd grants when a Lock or Campaign names no lease. */
export const sessionTtlSeconds = 60;

/** etcd's `fmt.Sprintf("%s%x", pfx, lease)`. */
export function contenderKey(prefix: Uint8Array, lease: bigint): Uint8Array {
  const hex = utf8(lease.toString(16));
  const key = new Uint8Array(prefix.length + hex.length);
  key.set(prefix);
  key.set(hex, prefix.length);
  return key;
}

/** `name + "/"`: the prefix every contender key of a lock or election lives under. */
export function contenderPrefix(name: Uint8Array): Uint8Array {
  const prefix = new Uint8Array(name.length + 1);
  prefix.set(name);
  prefix[name.length] = 0x2f;
  return prefix;
}

export function rangeRequest(key: Uint8Array, fields: Partial<RangeRequest> = {}): RangeRequest {
  return {
    key,
    rangeEnd: new Uint8Array(0),
    limit: 0,
    revision: 0,
    sortOrder: SortOrder.None,
    sortTarget: SortTarget.Key,
    serializable: false,
    keysOnly: false,
    countOnly: false,
    minModRevision: 0,
    maxModRevision: 0,
    minCreateRevision: 0,
    maxCreateRevision: 0,
    ...fields,
  };
}

/** clientv3.WithFirstCreate: the oldest key under the prefix. */
export function firstCreated(prefix: Uint8Array): RangeRequest {
  return rangeRequest(prefix, { rangeEnd: prefixEnd(prefix), limit: 1, sortOrder: SortOrder.Ascend, sortTarget: SortTarget.Create });
}

/** clientv3.WithLastCreate + WithMaxCreateRev: the youngest key under the prefix created at or before `maxCreateRevision`. */
function lastCreatedBefore(prefix: Uint8Array, maxCreateRevision: number): RangeRequest {
  return rangeRequest(prefix, {
    rangeEnd: prefixEnd(prefix),
    limit: 1,
    sortOrder: SortOrder.Descend,
    sortTarget: SortTarget.Create,
    maxCreateRevision,
  });
}

/** Put `key` (with `value`, on `lease`) unless it exists; either way read the key and the oldest contender. */
export function joinTxn(key: Uint8Array, value: Uint8Array, lease: bigint, prefix?: Uint8Array): TxnRequest {
  const owner = prefix === undefined ? [] : [{ range: firstCreated(prefix) }];
  return {
    compare: [{ result: CompareResult.Equal, target: CompareTarget.Create, key, rangeEnd: new Uint8Array(0), createRevision: 0 }],
    success: [{ put: { key, value, lease, prevKv: false, ignoreValue: false, ignoreLease: false } }, ...owner],
    failure: [{ range: rangeRequest(key) }, ...owner],
  };
}

/** A txn guarded by "key still has the create revision it had when we joined". */
export function ifCreatedAt(key: Uint8Array, createRevision: number, then: TxnRequest['success']): TxnRequest {
  return { compare: [{ result: CompareResult.Equal, target: CompareTarget.Create, key, rangeEnd: new Uint8Array(0), createRevision }], success: then, failure: [] };
}

/** A child context whose signal also fires when `done` is called (to stop a watch we no longer need). */
function childContext(ctx: RequestContext): { ctx: RequestContext; done: () => void } {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  if (ctx.signal.aborted) controller.abort();
  else ctx.signal.addEventListener('abort', onAbort, { once: true });
  return {
    // The caller's credentials go along: under auth, every read and write of the recipe is the caller's.
    ctx: { ...credentials(ctx), requireLeader: ctx.requireLeader, signal: controller.signal },
    done: () => {
      ctx.signal.removeEventListener('abort', onAbort);
      controller.abort();
    },
  };
}

/**
 * Watches [key, rangeEnd) from `startRevision` and hands every response to `onResponse` until it returns true,
 * the watcher is canceled (rejects with its reason) or the caller's context aborts (rejects with AbortError).
 */
export function watchUntil(
  api: EtcdApi,
  req: { key: Uint8Array; rangeEnd?: Uint8Array; startRevision: number },
  ctx: RequestContext,
  onResponse: (r: WatchResponse) => boolean,
): Promise<void> {
  const child = childContext(ctx);
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (err?: unknown): void => {
      if (settled) return;
      settled = true;
      child.done();
      stream.close();
      if (err === undefined) resolve();
      else reject(err);
    };
    const stream = api.openWatchStream(
      {
        send: (r) => {
          if (settled) return true;
          if (r.canceled) settle(new Error(r.cancelReason || 'lost watcher waiting for delete'));
          else if (!r.created && onResponse(r)) settle();
          return true;
        },
      },
      child.ctx,
    );
    if (ctx.signal.aborted) return settle(abortError());
    ctx.signal.addEventListener('abort', () => settle(abortError()), { once: true });
    stream.create(watchCreateRequest({ key: req.key, rangeEnd: req.rangeEnd ?? new Uint8Array(0), startRevision: req.startRevision }));
  });
}

function abortError(): Error {
  const err = new Error('context canceled');
  err.name = 'AbortError';
  return err;
}

/** concurrency.waitDelete: resolves once `key` is deleted at or after `revision`. */
function waitDelete(api: EtcdApi, key: Uint8Array, revision: number, ctx: RequestContext): Promise<void> {
  return watchUntil(api, { key, startRevision: revision }, ctx, (r) => r.events.some((e) => e.type === EventType.Delete));
}

/**
 * concurrency.waitDeletes: waits until no key under `prefix` with create revision ≤ `maxCreateRevision` is left,
 * each time on the youngest such key (so contenders form a queue, not a herd). Returns the last range's revision.
 */
export async function waitDeletes(api: EtcdApi, prefix: Uint8Array, maxCreateRevision: number, ctx: RequestContext): Promise<number> {
  for (;;) {
    const r = await api.range(lastCreatedBefore(prefix, maxCreateRevision), ctx);
    const last = r.kvs[0];
    if (last === undefined) return r.revision;
    await waitDelete(api, last.key, r.revision, ctx);
  }
}

/** The first key-value of a txn sub-response that is a range. */
export function rangeOf(op: unknown): RangeResponse {
  const r = (op as { range?: RangeResponse } | undefined)?.range;
  assert(r !== undefined, 'txn sub-response is not a range');
  return r;
}

/**
 * Cleanup after the caller's context is gone (release a key, withdraw a candidacy) must not be canceled with
 * it, but is still the caller's: under auth, a cleanup without its credentials was refused and the key stayed
 * until its lease ended (issue 20, item 7).
 */
export function detached(ctx: RequestContext): RequestContext {
  return { ...credentials(ctx), requireLeader: false, signal: new AbortController().signal };
}

/** What auth reads from a context: the token, or the verified certificate's common name. */
function credentials(ctx: RequestContext): Pick<RequestContext, 'token' | 'certCommonName'> {
  return { token: ctx.token, certCommonName: ctx.certCommonName };
}
