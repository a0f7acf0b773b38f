/**
 * What a member proposes through Raft: etcd's InternalRaftRequest, as a msgpack envelope. Everything an
 * apply needs is inside the entry (ids chosen by the proposer, the leader's time-based decisions), so apply
 * stays a deterministic function of the entry and the current state.
 */
import type { AuthInfo, AuthRequest } from '../auth/index.js';
import type { AlarmType, DeleteRangeRequest, PutRequest, TxnRequest } from '../mvcc/types.js';
import { pack, unpack } from './codec.js';
import type { Member } from './membership.js';

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
  return pack(env);
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
 * Request ids: unique per member across restarts. The high bits are the boot time in ms (monotonic enough
 * across restarts of one process on one host), the low 20 bits a counter, as etcd's idutil does.
 */
export class RequestIdGenerator {
  #prefix: bigint;
  #counter = 0n;

  constructor(bootTimeMs: number) {
    this.#prefix = BigInt(bootTimeMs) << 20n;
  }

  next(): bigint {
    this.#counter += 1n;
    if (this.#counter >= 1n << 20n) {
      this.#prefix += 1n << 20n;
      this.#counter = 1n;
    }
    return this.#prefix + this.#counter;
  }
}
