/**
 * Member and cluster IDs exactly as etcd derives them for a static bootstrap, so the same
 * `--initial-cluster` and `--initial-cluster-token` name the same members and cluster as etcd would
 * (dashboards, `member list` output and scripts that record IDs keep working after a binary swap).
 *
 * etcd 3.5 membership.computeMemberId: sha1(sorted peer URLs joined with no separator + cluster token
 * [+ unix seconds, for members added at runtime]), first 8 bytes big-endian. RaftCluster.genID: sha1 of the
 * member IDs sorted ascending, each as 8 bytes big-endian, first 8 bytes big-endian.
 *
 *   memberIdOf(['http://127.0.0.1:2380'], 'etcd-cluster')  // the ID etcd gives `--name default`
 */
import { createHash } from 'node:crypto';

export function memberIdOf(peerUrls: readonly string[], clusterToken: string, addedAtUnixSeconds?: number): bigint {
  let text = [...peerUrls].sort().join('') + clusterToken;
  if (addedAtUnixSeconds !== undefined) text += String(Math.floor(addedAtUnixSeconds));
  return createHash('sha1').update(text, 'utf8').digest().readBigUInt64BE(0);
}

export function clusterIdOf(memberIds: readonly bigint[]): bigint {
  const sorted = [...memberIds].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const bytes = Buffer.alloc(8 * sorted.length);
  sorted.forEach((id, i) => bytes.writeBigUInt64BE(id, 8 * i));
  return createHash('sha1').update(bytes).digest().readBigUInt64BE(0);
}

/**
 * The IDs of a static initial cluster, with etcd's refusals: two members hashing to the same ID (the same
 * peer URLs) and the ID 0 (Raft's "none").
 */
export function staticClusterIds(members: ReadonlyArray<{ name: string; peerUrls: readonly string[] }>, clusterToken: string): {
  memberIds: Map<string, bigint>;
  clusterId: bigint;
} {
  const memberIds = new Map<string, bigint>();
  const seen = new Set<bigint>();
  for (const m of members) {
    const id = memberIdOf(m.peerUrls, clusterToken);
    if (seen.has(id)) throw new Error(`member exists with identical ID ${id.toString(16)} (${m.name})`);
    if (id === 0n) throw new Error('cannot use 0 as member id');
    seen.add(id);
    memberIds.set(m.name, id);
  }
  return { memberIds, clusterId: clusterIdOf([...seen]) };
}
