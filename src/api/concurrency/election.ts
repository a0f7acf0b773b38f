/**
 * v3election's Campaign, Proclaim, Leader, Resign and Observe (etcd server/etcdserver/api/v3election with
 * concurrency.Election): the leader of election `name` is the oldest key under `name/`; its value is the
 * leader's proclamation. Errors are etcd's plain ones (gRPC UNKNOWN with the same text).
 */
import type { EtcdApi, RequestContext } from '../../node/server-api.js';
import { EventType } from '../../mvcc/types.js';
import type { KeyValue } from '../../mvcc/types.js';
import { prefixEnd } from '../../base/bytes.js';
import {
  contenderKey,
  detached,
  contenderPrefix,
  firstCreated,
  ifCreatedAt,
  joinTxn,
  rangeOf,
  sessionTtlSeconds,
  waitDeletes,
  watchUntil,
} from './recipes.js';

export const electionErrors = {
  /** concurrency.ErrElectionNotLeader */
  notLeader: 'election: not leader',
  /** concurrency.ErrElectionNoLeader */
  noLeader: 'election: no leader',
  /** v3election.ErrMissingLeaderKey */
  missingLeaderKey: '"leader" field must be provided',
} as const;

export interface LeaderKey {
  name: Uint8Array;
  key: Uint8Array;
  rev: number;
  lease: bigint;
}

/** Blocks until `lease` leads election `name`, then returns its leader key. Lease 0: a new 60 s lease. */
export async function campaign(
  api: EtcdApi,
  req: { name: Uint8Array; lease: bigint; value: Uint8Array },
  ctx: RequestContext,
): Promise<{ leader: LeaderKey; revision: number }> {
  const lease = req.lease === 0n ? (await api.leaseGrant({ ttlSeconds: sessionTtlSeconds, id: 0n }, ctx)).id : req.lease;
  const prefix = contenderPrefix(req.name);
  const key = contenderKey(prefix, lease);
  const joined = await api.txn(joinTxn(key, req.value, lease), ctx);
  const leader: LeaderKey = { name: req.name, key, rev: joined.revision, lease };
  if (!joined.succeeded) {
    const kv = rangeOf(joined.responses[0]).kvs[0]!;
    leader.rev = kv.createRevision;
    if (!Buffer.from(kv.value).equals(Buffer.from(req.value))) {
      try {
        await proclaim(api, leader, req.value, ctx);
      } catch (err) {
        await resign(api, leader, detached(ctx)).catch(() => {});
        throw err;
      }
    }
  }
  try {
    await waitDeletes(api, prefix, leader.rev - 1, ctx);
  } catch (err) {
    // A canceled campaign withdraws its key, as Election.Campaign does on context cancel.
    if (ctx.signal.aborted) await resign(api, leader, detached(ctx)).catch(() => {});
    throw err;
  }
  return { leader, revision: joined.revision };
}

/** Replaces the leader's value while `leader` still leads; returns the revision after. */
export async function proclaim(api: EtcdApi, leader: LeaderKey, value: Uint8Array, ctx: RequestContext): Promise<number> {
  const put = { key: leader.key, value, lease: leader.lease, prevKv: false, ignoreValue: false, ignoreLease: false };
  const r = await api.txn(ifCreatedAt(leader.key, leader.rev, [{ put }]), ctx);
  if (!r.succeeded) throw new Error(electionErrors.notLeader);
  return r.revision;
}

/** Gives up leadership (or candidacy): deletes the key if it is still ours. Returns the revision after. */
export async function resign(api: EtcdApi, leader: LeaderKey, ctx: RequestContext): Promise<number> {
  const del = { key: leader.key, rangeEnd: new Uint8Array(0), prevKv: false };
  const r = await api.txn(ifCreatedAt(leader.key, leader.rev, [{ deleteRange: del }]), ctx);
  return r.revision;
}

/** The current leader's key-value. */
export async function leader(api: EtcdApi, name: Uint8Array, ctx: RequestContext): Promise<{ kv: KeyValue; revision: number }> {
  const r = await api.range(firstCreated(contenderPrefix(name)), ctx);
  const kv = r.kvs[0];
  if (kv === undefined) throw new Error(electionErrors.noLeader);
  return { kv, revision: r.revision };
}

/**
 * Election.Observe: reports the leader, then every proclamation, then the next leader once that key is gone,
 * until the context aborts (resolves then) or a read fails (resolves too: etcd ends the stream with OK).
 */
export async function observe(
  api: EtcdApi,
  name: Uint8Array,
  ctx: RequestContext,
  send: (kv: KeyValue, revision: number) => void,
): Promise<void> {
  const prefix = contenderPrefix(name);
  try {
    while (!ctx.signal.aborted) {
      const r = await api.range(firstCreated(prefix), ctx);
      let current = r.kvs[0];
      let revision = r.revision;
      if (current === undefined) {
        // No leader yet: wait for the first put under the prefix (a delete would only make us spin).
        await watchUntil(api, { key: prefix, rangeEnd: prefixEnd(prefix), startRevision: r.revision }, ctx, (w) => {
          const put = w.events.find((e) => e.type === EventType.Put);
          if (put === undefined) return false;
          current = put.kv;
          revision = w.revision;
          return true;
        });
      }
      const kv = current!;
      send(kv, revision);
      await watchUntil(api, { key: kv.key, startRevision: revision + 1 }, ctx, (w) => {
        for (const e of w.events) {
          if (e.type === EventType.Delete) return true;
          send(e.kv, w.revision);
        }
        return false;
      });
    }
  } catch {
    // Canceled by the client, or the store refused a read: either way the observation ends quietly.
  }
}
