/** v3lockpb.Lock: Lock and Unlock (etcd's api/v3lock), on the recipes of src/api/concurrency/lock.ts. */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { EtcdApi } from '../../node/server-api.js';
import { lock, unlock } from '../concurrency/lock.js';
import { unary } from './call.js';
import { encodeHeader, id } from './messages.js';

export function lockService(api: EtcdApi): UntypedServiceImplementation {
  return {
    Lock: unary(api, async (m, ctx) => {
      const r = await lock(api, { name: Buffer.from(m.name), lease: id(m.lease, true) }, ctx);
      return { header: encodeHeader(api.header(r.revision)), key: r.key };
    }),
    Unlock: unary(api, async (m, ctx) => {
      const revision = await unlock(api, Buffer.from(m.key), ctx);
      return { header: encodeHeader(api.header(revision)) };
    }),
  };
}
