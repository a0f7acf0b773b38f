/** etcdserverpb.Cluster: member add/remove/update/list/promote (etcd's api/v3rpc/member.go). */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { EtcdApi, Member } from '../../node/server-api.js';
import { EtcdError } from '../../node/errors.js';
import { unary } from './call.js';
import { encodeHeader, encodeMember, id } from './messages.js';
import type { Wire } from './proto.js';

/** etcd's cluster responses carry cluster, member and term but no revision. */
function clusterHeader(api: EtcdApi): Wire {
  return encodeHeader({ ...api.header(), revision: 0 });
}

const members = (api: EtcdApi, list: Member[]): Wire => ({
  header: clusterHeader(api),
  members: list.map(encodeMember),
});

/** etcd's types.NewURLs: every URL parses, has a host:port and an http/https/unix scheme, and no path. */
export function validPeerUrls(urls: string[]): boolean {
  if (urls.length === 0) return false;
  for (const raw of urls) {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      return false;
    }
    if (!['http:', 'https:', 'unix:', 'unixs:'].includes(u.protocol)) return false;
    if (u.host === '' || (u.protocol.startsWith('http') && u.port === '')) return false;
    if (u.pathname !== '' && u.pathname !== '/') return false;
  }
  return true;
}

export function clusterService(api: EtcdApi): UntypedServiceImplementation {
  return {
    MemberAdd: unary(api, async (m, ctx) => {
      const peerUrls = m.peerURLs as string[];
      if (!validPeerUrls(peerUrls)) throw new EtcdError('memberBadUrls');
      const r = await api.memberAdd({ peerUrls, isLearner: m.isLearner }, ctx);
      return { ...members(api, r.members), member: encodeMember(r.member) };
    }),
    MemberRemove: unary(api, async (m, ctx) => members(api, await api.memberRemove(id(m.ID, false), ctx))),
    MemberUpdate: unary(api, async (m, ctx) => {
      const peerUrls = m.peerURLs as string[];
      if (!validPeerUrls(peerUrls)) throw new EtcdError('memberBadUrls');
      return members(api, await api.memberUpdate({ id: id(m.ID, false), peerUrls }, ctx));
    }),
    MemberList: unary(api, async (m, ctx) => members(api, await api.memberList(m.linearizable, ctx))),
    MemberPromote: unary(api, async (m, ctx) => members(api, await api.memberPromote(id(m.ID, false), ctx))),
  };
}
