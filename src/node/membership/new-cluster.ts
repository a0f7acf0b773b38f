/**
 * A cluster bootstrapped from a static `--initial-cluster`: its member and cluster ids (etcd-ids.ts) and the first
 * entries of its log. Used by main's bootstrap (a new member) and by backup's restore, which builds a data
 * directory a member then starts from; the identity those write is storage/identity.ts.
 */
import { encodeConfChange } from '../../raft/conf.js';
import { EntryType, type Entry } from '../../raft/types.js';
import { encodeConfChangeContext } from '../driver/raft-request.js';
import type { Member } from '../api-types.js';
import { staticClusterIds } from './etcd-ids.js';

/** Member and cluster ids of a static bootstrap (`--initial-cluster`, `--initial-cluster-token`); also used by restore. */
export function staticCluster(initialCluster: Array<{ name: string; peerUrls: string[] }>, clusterToken: string): { members: Member[]; clusterId: bigint } {
  const ids = staticClusterIds(initialCluster, clusterToken);
  const members: Member[] = initialCluster.map((m) => ({
    id: ids.memberIds.get(m.name)!,
    name: m.name,
    peerUrls: m.peerUrls,
    clientUrls: [],
    isLearner: false,
  }));
  return { members, clusterId: ids.clusterId };
}

/**
 * The log of a new cluster: one committed conf change entry per initial member, carrying its attributes:
 * addVoter, or addWitness for the members `witnesses` names (src/raft/witness.ts).
 */
export function bootstrapEntries(members: Member[], witnesses: readonly bigint[] = []): Entry[] {
  return members.map((member, i) => ({
    term: 1,
    index: i + 1,
    type: EntryType.ConfChange,
    data: encodeConfChange({
      type: witnesses.includes(member.id) ? 'addWitness' : 'addVoter',
      nodeId: member.id,
      context: encodeConfChangeContext({ id: 0n, member }),
    }),
  }));
}
