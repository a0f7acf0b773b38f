/**
 * etcd's backend schema (server/storage/schema in 3.5/3.6, mvcc/backend + etcdserver/api/membership in 3.4),
 * the values we translate to and from. Our own backend already stores `key`, `lease`, `alarm` and the
 * revision/index entries of `meta` with etcd's exact bytes; members and the Raft configuration are kept in
 * our own encoding and converted here.
 *
 *   key:      17-byte revision (main BE '_' sub BE), + 't' for a tombstone → mvccpb.KeyValue
 *   meta:     consistent_index, term → u64 BE; scheduledCompactRev, finishedCompactRev → 17-byte revision;
 *             confState → JSON of raftpb.ConfState (3.5+)
 *   lease:    id as u64 BE → leasepb.Lease
 *   members:  id in hex (Go's types.ID.String()) → JSON {"id","peerURLs","isLearner"?,"name"?,"clientURLs"?}
 *   members_removed: id in hex → "removed"
 *   cluster:  clusterVersion → "3.5.0"
 *   alarm:    etcdserverpb.AlarmMember → empty
 */
import { utf8 } from '../base/bytes.js';
import type { Member } from '../storage/members-bucket.js';

export const bucketNames = {
  key: 'key',
  meta: 'meta',
  lease: 'lease',
  alarm: 'alarm',
  cluster: 'cluster',
  members: 'members',
  membersRemoved: 'members_removed',
  auth: 'auth',
  authUsers: 'authUsers',
  authRoles: 'authRoles',
} as const;

export const metaKeys = {
  consistentIndex: 'consistent_index',
  term: 'term',
  scheduledCompact: 'scheduledCompactRev',
  finishedCompact: 'finishedCompactRev',
  confState: 'confState',
} as const;

export const clusterVersionKey = 'clusterVersion';

/** The cluster version etcd records: the server's major.minor with patch 0. */
export function clusterVersionOf(serverVersion: string): string {
  const [major, minor] = serverVersion.split('.');
  return `${major}.${minor}.0`;
}

/** Go's json.Marshal of membership.Member (field order and omitempty as etcd's struct tags). */
export function encodeMemberJson(m: Member): Uint8Array {
  let json = `{"id":${m.id.toString()},"peerURLs":${JSON.stringify(m.peerUrls)}`;
  if (m.isLearner) json += ',"isLearner":true';
  if (m.name !== '') json += `,"name":${JSON.stringify(m.name)}`;
  if (m.clientUrls.length > 0) json += `,"clientURLs":${JSON.stringify(m.clientUrls)}`;
  return utf8(`${json}}`);
}

export function decodeMemberJson(b: Uint8Array): Member {
  const text = new TextDecoder().decode(b);
  // The id is a uint64: parse it as text before JSON.parse rounds it to a double.
  const id = /"id"\s*:\s*(\d+)/.exec(text)?.[1];
  const j = JSON.parse(text) as { peerURLs?: string[]; isLearner?: boolean; name?: string; clientURLs?: string[] };
  return { id: BigInt(id ?? '0'), name: j.name ?? '', peerUrls: j.peerURLs ?? [], clientUrls: j.clientURLs ?? [], isLearner: j.isLearner === true };
}

/** Go's types.ID.String(): lowercase hex without padding. */
export function memberKey(id: bigint): Uint8Array {
  return utf8(id.toString(16));
}

/** json.Marshal(raftpb.ConfState) as etcd 3.5 stores it. */
export function encodeConfStateJson(cs: { voters: bigint[]; learners: bigint[] }): Uint8Array {
  const list = (ids: bigint[]): string => `[${ids.map((id) => id.toString()).join(',')}]`;
  let json = '{';
  if (cs.voters.length > 0) json += `"voters":${list(cs.voters)},`;
  if (cs.learners.length > 0) json += `"learners":${list(cs.learners)},`;
  return utf8(`${json}"auto_leave":false}`);
}

export function u64Be(n: number | bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n));
  return out;
}

export function readU64Be(b: Uint8Array): number {
  return Number(new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(0));
}
