/**
 * What a member proposes through Raft: etcd's InternalRaftRequest, as a msgpack envelope. Everything an
 * apply needs is inside the entry (ids chosen by the proposer, the leader's time-based decisions), so apply
 * stays a deterministic function of the entry and the current state.
 */
import type { AuthInfo, AuthRequest } from '../../auth/index.js';
import type { AlarmType, DeleteRangeRequest, PutRequest, TxnRequest } from '../../mvcc/types.js';
import { pack, unpack } from '../../storage/entry-codec.js';
import { encodePutEntry } from './put-entry.js';
import type { Member } from '../api-types.js';

/**
 * `auth`: the user the request speaks for and the auth revision its permissions were judged at (etcd's
 * RequestHeader username / auth_revision); absent when the client sent no credentials.
 */
export type RaftRequest = (
  | { kind: 'put'; put: PutRequest }
  | { kind: 'deleteRange'; deleteRange: DeleteRangeRequest }
  | { kind: 'txn'; txn: TxnRequest }
  | { kind: 'compact'; revision: number; physical: boolean }
  | { kind: 'leaseGrant'; leaseId: bigint; ttlSeconds: number }
  | { kind: 'leaseRevoke'; leaseId: bigint }
  | { kind: 'leaseCheckpoint'; checkpoints: { leaseId: bigint; remainingTtlSeconds: number }[] }
  | { kind: 'alarm'; action: 'activate' | 'deactivate'; memberId: bigint; alarm: AlarmType }
  | { kind: 'publish'; memberId: bigint; name: string; clientUrls: string[] }
  | { kind: 'memberUpdate'; memberId: bigint; peerUrls: string[] }
  // Builds before 0.2 apply an unknown kind as nothing (and have no cluster version to set).
  | { kind: 'clusterVersionSet'; version: string }
  | AuthRequest
) & { auth?: AuthInfo };

export interface RaftEnvelope {
  /** The proposer's request id: only the proposing member waits on it. */
  id: bigint;
  req: RaftRequest;
}

/** The context of a conf-change entry: the member it adds or changes, and the proposer's request id. */
export interface ConfChangeContext {
  id: bigint;
  member: Member;
}

export function encodeRequest(env: RaftEnvelope): Uint8Array {
  // A plain put, the common entry, skips msgpackr's generic walk (same bytes: put-entry.ts).
  return (env.req.kind === 'put' ? encodePutEntry(env) : undefined) ?? pack(env);
}

export function decodeRequest(data: Uint8Array): RaftEnvelope {
  return unpack<RaftEnvelope>(data);
}

export function encodeConfChangeContext(ctx: ConfChangeContext): Uint8Array {
  return pack(ctx);
}

export function decodeConfChangeContext(data: Uint8Array): ConfChangeContext {
  return unpack<ConfChangeContext>(data);
}

/**
 * Request ids, unique in the cluster across restarts (etcd's idutil): [member id, low 15 bits][boot time in
 * ms, 40 bits][counter, 8 bits], the counter carrying into the time. The member bits matter: every member
 * applies every entry and wakes the waiter of its id, so two members issuing one id would answer one
 * member's client with the other's result (the production-node simulator found this: two members booted in
 * the same millisecond). 15 bits, not etcd's 16, keep ids below 2^63 (a signed int64 on the wire).
 */
export class RequestIdGenerator {
  readonly #prefix: bigint;
  #suffix: bigint;

  constructor(memberId: bigint, bootTimeMs: number) {
    this.#prefix = (memberId & 0x7fffn) << 48n;
    this.#suffix = (BigInt(Math.floor(bootTimeMs)) & ((1n << 40n) - 1n)) << 8n;
  }

  next(): bigint {
    this.#suffix = (this.#suffix + 1n) & ((1n << 48n) - 1n);
    return this.#prefix | this.#suffix;
  }
}
