/**
 * The replicated member list (etcd's membership.RaftCluster). Changed only by applying committed entries
 * (conf changes and attribute publications), so every member holds the same list at the same applied index.
 * Persisted in the backend's 'members' bucket (storage/members-bucket.ts) through the apply write buffer; removed
 * ids are remembered so a removed member can never rejoin under its old id (etcd does the same).
 */
import type { Backend, WriteBuffer } from '../../mvcc/backend.js';
import type { Member } from '../api-types.js';
import {
  clusterVersionEntryKey, decodeMembersEntry, encodeMemberEntry, memberEntryKey, removedEntryKey,
} from '../../storage/members-bucket.js';

export type { Member };

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
    buffer.put('members', clusterVersionEntryKey, new TextEncoder().encode(version));
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
    buffer.del('members', memberEntryKey(id));
    buffer.put('members', removedEntryKey(id), new Uint8Array(0));
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
