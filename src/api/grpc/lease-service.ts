/** etcdserverpb.Lease: grant, revoke, keep-alive stream, time-to-live, list (etcd's api/v3rpc/lease.go). */
import type { ServerDuplexStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import { MvccError } from '../../mvcc/types.js';
import type { EtcdApi } from '../../node/server-api.js';
import { EtcdError } from '../../node/errors.js';
import { failStream, openStream, unary } from './call.js';
import { encodeHeader, i64, id, long, n64, num } from './messages.js';
import type { LeaderStreams } from './leader-streams.js';
import type { Wire } from './proto.js';

/** Keep-alive requests read ahead of the one being renewed before the stream stops reading. */
const keepAliveQueueMax = 64;

function isLeaseNotFound(err: unknown): boolean {
  return (
    (err instanceof EtcdError && err.code === 'leaseNotFound') ||
    (err instanceof MvccError && err.code === 'leaseNotFound')
  );
}

export function leaseService(api: EtcdApi, streams: LeaderStreams): UntypedServiceImplementation {
  return {
    LeaseGrant: unary(api, async (m, ctx) => {
      const r = await api.leaseGrant({ ttlSeconds: num(m.TTL), id: id(m.ID, true) }, ctx);
      return { header: encodeHeader(api.header()), ID: long(r.id), TTL: n64(r.ttlSeconds, 'TTL') };
    }),
    LeaseRevoke: unary(api, async (m, ctx) => {
      const r = await api.leaseRevoke(id(m.ID, true), ctx);
      return { header: encodeHeader(api.header(r.revision)) };
    }),
    LeaseTimeToLive: unary(api, async (m, ctx) => {
      const leaseId = id(m.ID, true);
      try {
        const r = await api.leaseTimeToLive(leaseId, m.keys, ctx);
        return {
          header: encodeHeader(api.header()),
          ID: long(r.id),
          TTL: i64(r.ttlSeconds),
          grantedTTL: i64(r.grantedTtlSeconds),
          keys: r.keys.length === 0 ? undefined : r.keys,
        };
      } catch (err) {
        // etcd answers an unknown lease with TTL -1 rather than an error.
        if (!isLeaseNotFound(err)) throw err;
        return { header: encodeHeader(api.header()), ID: long(leaseId), TTL: -1 };
      }
    }),
    LeaseLeases: unary(api, async (_m, ctx) => {
      const ids = await api.leaseLeases(ctx);
      return { header: encodeHeader(api.header()), leases: ids.map((l) => ({ ID: long(l) })) };
    }),
    LeaseKeepAlive: (call: ServerDuplexStream<Wire, Wire>) => keepAlive(api, streams, call),
  };
}

/** Renews one request at a time, in order, as etcd's recv loop does; an unknown lease answers TTL 0. */
function keepAlive(api: EtcdApi, streams: LeaderStreams, call: ServerDuplexStream<Wire, Wire>): void {
  const ctx = openStream(api, call);
  if (ctx === undefined) return;
  const queue: Wire[] = [];
  let running = false;
  let done = false;
  let ended = false;
  const untrack = streams.track(ctx, (err) => finish(err));
  const finish = (err?: unknown): void => {
    if (done) return;
    done = true;
    untrack();
    ctx.finish();
    if (call.cancelled) return;
    if (err === undefined) call.end();
    else failStream(call, err);
  };
  const pump = async (): Promise<void> => {
    running = true;
    while (queue.length > 0 && !done) {
      const m = queue.shift()!;
      if (queue.length < keepAliveQueueMax / 2) call.resume();
      const leaseId = id(m.ID, true);
      const header = encodeHeader(api.header());
      let ttl = 0;
      try {
        ttl = await api.leaseKeepAlive(leaseId, ctx);
      } catch (err) {
        if (!isLeaseNotFound(err)) return finish(err);
      }
      if (done || ctx.cancelled) return;
      call.write({ header, ID: long(leaseId), TTL: i64(ttl) });
    }
    running = false;
    if (ended) finish();
  };
  call.on('data', (m: Wire) => {
    queue.push(m);
    if (queue.length >= keepAliveQueueMax) call.pause();
    if (!running) void pump();
  });
  call.on('end', () => {
    // Client half-closed: answer what was asked, then close with OK.
    ended = true;
    if (!running) finish();
  });
  call.on('cancelled', () => finish());
}
