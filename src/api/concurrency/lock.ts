/**
 * v3lock's Lock and Unlock (etcd server/etcdserver/api/v3lock with concurrency.Mutex): the lock `name` is held by
 * the oldest key under `name/`; a contender puts `name/<lease hex>` on its lease and waits for the deletion of
 * every older key. A lease expiring (its holder died) or an Unlock deleting the key hands the lock on.
 */
import type { EtcdApi, RequestContext } from '../../node/server-api.js';
import { contenderKey, detached, contenderPrefix, joinTxn, rangeOf, rangeRequest, sessionTtlSeconds, waitDeletes } from './recipes.js';

export interface LockResult {
  key: Uint8Array;
  /** header.revision of the answer. */
  revision: number;
}

/** concurrency.ErrSessionExpired: our key vanished (lease expired) while we waited. */
export const sessionExpiredMessage = 'session expired';

/** Blocks until this lease holds the lock. Lease 0: a new lease of etcd's default session TTL (60 s). */
export async function lock(api: EtcdApi, req: { name: Uint8Array; lease: bigint }, ctx: RequestContext): Promise<LockResult> {
  const lease = req.lease === 0n ? (await api.leaseGrant({ ttlSeconds: sessionTtlSeconds, id: 0n }, ctx)).id : req.lease;
  const prefix = contenderPrefix(req.name);
  const key = contenderKey(prefix, lease);
  const joined = await api.txn(joinTxn(key, new Uint8Array(0), lease, prefix), ctx);
  // Our own create revision: the txn's revision if we just put the key, else the key's (this lease holds or awaits it already).
  const myRevision = joined.succeeded ? joined.revision : rangeOf(joined.responses[0]).kvs[0]!.createRevision;
  const owner = rangeOf(joined.responses[1]).kvs[0];
  if (owner === undefined || owner.createRevision === myRevision) return { key, revision: joined.revision };
  try {
    await waitDeletes(api, prefix, myRevision - 1, ctx);
    const mine = await api.range(rangeRequest(key), ctx);
    if (mine.kvs.length === 0) throw new Error(sessionExpiredMessage);
    return { key, revision: mine.revision };
  } catch (err) {
    // Mutex.Lock releases the key when waiting failed, so a canceled waiter does not block the queue.
    await unlock(api, key, detached(ctx)).catch(() => {});
    throw err;
  }
}

/** Deletes the lock key; returns the revision after. */
export async function unlock(api: EtcdApi, key: Uint8Array, ctx: RequestContext): Promise<number> {
  const r = await api.deleteRange({ key, rangeEnd: new Uint8Array(0), prevKv: false }, ctx);
  return r.revision;
}
