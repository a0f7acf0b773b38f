/**
 * etcdserverpb.KV: Range, Put, DeleteRange, Txn, Compact (etcd's api/v3rpc/key.go). Requests are validated
 * behind the EtcdApi (src/node/request/validate.ts), for every front end alike.
 */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { EtcdApi } from '../../node/server-api.js';
import { EtcdError } from '../../node/errors.js';
import { unary } from './call.js';
import {
  decodeDeleteRange,
  decodePut,
  decodeRange,
  decodeTxn,
  encodeDeleteRange,
  encodeHeader,
  encodePut,
  encodeTxn,
  num,
} from './messages.js';
import { encodeRangeResponse } from './fast-encode.js';
import { isTooDeep } from './proto.js';

export function kvService(api: EtcdApi): UntypedServiceImplementation {
  return {
    Range: unary(api, async (m, ctx) => {
      const r = await api.range(decodeRange(m), ctx);
      return encodeRangeResponse(r, api.header(r.revision));
    }, (m) => m.serializable === true),
    // Not async: a .then spares the async function's promise and its await's (issue 34); unary catches a throw.
    Put: unary(api, (m, ctx) => api.put(decodePut(m), ctx).then((r) => encodePut(r, encodeHeader(api.header(r.revision))))),
    DeleteRange: unary(api, (m, ctx) =>
      api.deleteRange(decodeDeleteRange(m), ctx).then((r) => encodeDeleteRange(r, encodeHeader(api.header(r.revision))))),
    Txn: unary(api, (m, ctx) => {
      // Nested past what protobufjs decodes: far past any op budget (see protobufDepthMax).
      if (isTooDeep(m)) throw new EtcdError('tooManyOps');
      return api.txn(decodeTxn(m), ctx).then((r) => encodeTxn(r, encodeHeader(api.header(r.revision))));
    }),
    Compact: unary(api, async (m, ctx) => {
      const revision = num(m.revision);
      // Below every possible compaction point; the core only ever sees a valid revision.
      if (revision < 0) throw new EtcdError('compacted');
      const r = await api.compact({ revision, physical: m.physical }, ctx);
      return { header: encodeHeader(api.header(r.revision)) };
    }),
  };
}
