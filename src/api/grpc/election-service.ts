/**
 * v3electionpb.Election: Campaign, Proclaim, Leader, Observe, Resign (etcd's api/v3election), on the recipes of
 * src/api/concurrency/election.ts.
 */
import type { ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { EtcdApi } from '../../node/server-api.js';
import { campaign, electionErrors, leader, observe, proclaim, resign, type LeaderKey } from '../concurrency/election.js';
import { openStream, unary } from './call.js';
import { encodeHeader, encodeKeyValue, id, long, n64, num } from './messages.js';
import type { Wire } from './proto.js';

function decodeLeaderKey(m: Wire | null | undefined): LeaderKey {
  if (m == null) throw new Error(electionErrors.missingLeaderKey);
  return { name: Buffer.from(m.name), key: Buffer.from(m.key), rev: num(m.rev), lease: id(m.lease, true) };
}

export function electionService(api: EtcdApi): UntypedServiceImplementation {
  return {
    Campaign: unary(api, async (m, ctx) => {
      const r = await campaign(api, { name: Buffer.from(m.name), lease: id(m.lease, true), value: Buffer.from(m.value) }, ctx);
      const l = r.leader;
      return {
        header: encodeHeader(api.header(r.revision)),
        leader: { name: l.name, key: l.key, rev: n64(l.rev, 'rev'), lease: long(l.lease) },
      };
    }),
    Proclaim: unary(api, async (m, ctx) => {
      const revision = await proclaim(api, decodeLeaderKey(m.leader), Buffer.from(m.value), ctx);
      return { header: encodeHeader(api.header(revision)) };
    }),
    Leader: unary(api, async (m, ctx) => {
      const r = await leader(api, Buffer.from(m.name), ctx);
      return { header: encodeHeader(api.header(r.revision)), kv: encodeKeyValue(r.kv) };
    }),
    Resign: unary(api, async (m, ctx) => {
      const revision = await resign(api, decodeLeaderKey(m.leader), ctx);
      return { header: encodeHeader(api.header(revision)) };
    }),
    Observe: (call: ServerWritableStream<Wire, Wire>) => {
      const ctx = openStream(api, call);
      if (ctx === undefined) return;
      void observe(api, Buffer.from(call.request.name), ctx, (kv, revision) => {
        if (!ctx.cancelled) call.write({ header: encodeHeader(api.header(revision)), kv: encodeKeyValue(kv) });
      }).then(() => {
        ctx.finish();
        if (!call.cancelled) call.end();
      });
    },
  };
}
