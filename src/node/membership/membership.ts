/**
 * The replicated member list (etcd's membership.RaftCluster). Changed only by applying committed entries
 * (conf changes and attribute publications), so every member holds the same list at the same applied index.
 * Persisted in the backend's 'members' bucket through the apply write buffer; removed ids are remembered so a
 * removed member can never rejoin under its old id (etcd does the same).
 */
import { assert } from '../../base/assert.js';
import type { Backend, WriteBuffer } from '../../mvcc/backend.js';
import type { Member } from '../api-types.js';
import { pack, unpack } from '../../storage/entry-codec.js';

export type { Member };

const memberPrefix = 0x00;
const removedPrefix = 0x01;
/**
 * The cluster version (etcd keeps it in the cluster bucket). Its key is not 9 bytes long, so builds before
 * 0.2, which have no cluster version, skip it as an unknown entry.
 */
const clusterVersionKey = new TextEncoder().encode('clusterVersion');

function idKey(prefix: number, id: bigint): Uint8Array {
  const key = new Uint8Array(9);
  key[0] = prefix;
  new DataView(key.buffer).setBigUint64(1, id);
  return key;
}

/** One entry of the 'members' bucket (also read by the etcd snapshot export). */
export function decodeMembersEntry(key: Uint8Array, value: Uint8Array):
  { kind: 'member'; member: Member } | { kind: 'removed'; id: bigint } | { kind: 'clusterVersion'; version: string } | { kind: 'unknown' } {
  if (key.length === clusterVersionKey.length && Buffer.from(key).equals(clusterVersionKey)) {
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
  return [idKey(memberPrefix, member.id), pack(member)];
}

export class Membership {
  #members = new Map<bigint, Member>();
  #removed = new Set<bigint>();
  #clusterVersion: string | undefined;

  static async load(backend: Backend): Promise<Membership> {
    const m = new Membership();
    for await (const [key, value] of backend.scan('members')) {
      const entry = decodeMembersEntry(key, value);
      if (entry.kind === 'member') m.#members.set(entry.member.id, entry.member);
      else if (entry.kind === 'removed') m.#removed.add(entry.id);
      else if (entry.kind === 'clusterVersion') m.#clusterVersion = entry.version;
    }
    return m;
  }

  get(id: bigint): Member | undefined {
    return this.#members.get(id);
  }

  list(): Member[] {
    return [...this.#members.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  isRemoved(id: bigint): boolean {
    return this.#removed.has(id);
  }

  /** The version the cluster runs at, as last committed by a leader; undefined before one decided it. */
  get clusterVersion(): string | undefined {
    return this.#clusterVersion;
  }

  /** Apply path: a leader decided the cluster version (etcd's ClusterVersionSet request). */
  setClusterVersion(version: string, buffer: WriteBuffer): void {
    this.#clusterVersion = version;
    buffer.put('members', clusterVersionKey, new TextEncoder().encode(version));
  }

  get size(): number {
    return this.#members.size;
  }

  /** Apply path: add a member (a voter or a learner) or update one that exists (promotion). */
  upsert(member: Member, buffer: WriteBuffer): void {
    this.#members.set(member.id, member);
    const [key, value] = encodeMemberEntry(member);
    buffer.put('members', key, value);
  }

  remove(id: bigint, buffer: WriteBuffer): void {
    this.#members.delete(id);
    this.#removed.add(id);
    buffer.del('members', idKey(memberPrefix, id));
    buffer.put('members', idKey(removedPrefix, id), new Uint8Array(0));
  }

  /** Apply path: a member publishes its name and client URLs once it serves (etcd's publish). */
  setAttributes(id: bigint, name: string, clientUrls: string[], buffer: WriteBuffer): void {
    const m = this.#members.get(id);
    if (m === undefined) return; // removed meanwhile: etcd ignores it too
    this.upsert({ ...m, name, clientUrls }, buffer);
  }

  setPeerUrls(id: bigint, peerUrls: string[], buffer: WriteBuffer): void {
    const m = this.#members.get(id);
    if (m === undefined) return;
    this.upsert({ ...m, peerUrls }, buffer);
  }
}
