/**
 * The backend's 'members' bucket: how the replicated member list (node/membership/membership.ts) is kept, one
 * entry per member, one per removed id, and the cluster version. Read also by the etcd snapshot export
 * (etcd-db/buckets.ts) and written directly by a restore (node/apply/restore-point.ts).
 */
import { assert } from '../base/assert.js';
import { pack, unpack } from './entry-codec.js';

/** A member of the cluster as the members bucket keeps it (and as the client API shows it: node/api-types.ts). */
export interface Member {
  id: bigint;
  /** Empty until the member has started and published its name (etcd: unstarted members). */
  name: string;
  peerUrls: string[];
  clientUrls: string[];
  isLearner: boolean;
  /** Joined with `--server` (k3s): the leader promotes it once caught up. API-added learners wait for `member promote`. */
  autoPromote?: boolean;
}

const memberPrefix = 0x00;
const removedPrefix = 0x01;
/**
 * The cluster version (etcd keeps it in the cluster bucket). Its key is not 9 bytes long, so builds before
 * 0.2, which have no cluster version, skip it as an unknown entry.
 */
export const clusterVersionEntryKey = new TextEncoder().encode('clusterVersion');

function idKey(prefix: number, id: bigint): Uint8Array {
  const key = new Uint8Array(9);
  key[0] = prefix;
  new DataView(key.buffer).setBigUint64(1, id);
  return key;
}

/** The key of a member's entry. */
export function memberEntryKey(id: bigint): Uint8Array {
  return idKey(memberPrefix, id);
}

/** The key that remembers a removed id (its value is empty). */
export function removedEntryKey(id: bigint): Uint8Array {
  return idKey(removedPrefix, id);
}

/** One entry of the 'members' bucket (also read by the etcd snapshot export). */
export function decodeMembersEntry(key: Uint8Array, value: Uint8Array):
  { kind: 'member'; member: Member } | { kind: 'removed'; id: bigint } | { kind: 'clusterVersion'; version: string } | { kind: 'unknown' } {
  if (key.length === clusterVersionEntryKey.length && Buffer.from(key).equals(clusterVersionEntryKey)) {
    return { kind: 'clusterVersion', version: new TextDecoder().decode(value) };
  }
  if (key.length !== 9) return { kind: 'unknown' };
  const id = new DataView(key.buffer, key.byteOffset, key.byteLength).getBigUint64(1);
  if (key[0] === memberPrefix) return { kind: 'member', member: unpack<Member>(value) };
  if (key[0] === removedPrefix) return { kind: 'removed', id };
  return { kind: 'unknown' };
}

/** The 'members' bucket entry of a member (apply path, and a restore that writes the bucket directly). */
export function encodeMemberEntry(member: Member): [key: Uint8Array, value: Uint8Array] {
  assert(member.id !== 0n, 'member id 0 is reserved');
  return [memberEntryKey(member.id), pack(member)];
}
