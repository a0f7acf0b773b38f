/**
 * The request RPCs members send each other over the peer transport (and joiners through the join service):
 * one union of requests, with the answer type of each method. Failures travel as etcd error codes
 * (EtcdError) so the caller rethrows the same error, never by matching a message.
 */
import type { LeaseTimeToLiveResult, Member, MemberAddResult } from './api-types.js';
import type { HashAt } from './corruption/corruption-check.js';

/** A k3s-style join (`--server`): the new member's name and URLs; answered with its id and the members. */
export interface JoinRequest {
  name: string;
  peerUrls: string[];
  clientUrls: string[];
  /** Join as a witness (src/raft/witness.ts): a voter at once, holding no data, with no client URLs. */
  witness?: boolean;
  /** The joiner's build (base/version.ts); absent from builds before the cluster version, which are 0.1.0. */
  build?: string;
}

export interface JoinResponse {
  memberId: bigint;
  clusterId: bigint;
  members: Member[];
}

export type PeerRpc =
  /** Sent to a member a committed change removed (it may never see the entry): it stops. */
  | { method: 'removed'; payload: { id: bigint } }
  | { method: 'leaseKeepAlive'; payload: { id: bigint } }
  | { method: 'leaseTimeToLive'; payload: { id: bigint; keys: boolean } }
  | { method: 'hashKV'; payload: { revision: number } }
  | { method: 'memberAdd'; payload: { peerUrls: string[]; isLearner: boolean } }
  | { method: 'memberRemove'; payload: { id: bigint } }
  /** A joiner whose start failed removes itself, through the Join service (cluster-ops.ts leaveUnstarted). */
  | { method: 'leaveUnstarted'; payload: { id: bigint } }
  | { method: 'memberPromote'; payload: { id: bigint } }
  | { method: 'memberUpdate'; payload: { id: bigint; peerUrls: string[] } }
  | { method: 'join'; payload: JoinRequest }
  | { method: 'members'; payload: Record<string, never> };

export type PeerMethod = PeerRpc['method'];
export type PeerPayload<M extends PeerMethod> = Extract<PeerRpc, { method: M }>['payload'];

export interface PeerResults {
  removed: Record<string, never>;
  leaseKeepAlive: number;
  leaseTimeToLive: LeaseTimeToLiveResult;
  hashKV: HashAt;
  memberAdd: MemberAddResult;
  memberRemove: Member[];
  leaveUnstarted: Member[];
  memberPromote: Member[];
  memberUpdate: Member[];
  join: JoinResponse;
  members: { clusterId: bigint; members: Member[] };
}

/** A peer request RPC to the member at `url`. */
export type PeerCall = <M extends PeerMethod>(url: string, method: M, payload: PeerPayload<M>) => Promise<PeerResults[M]>;

const methods: ReadonlySet<string> = new Set<PeerMethod>([
  'removed', 'leaseKeepAlive', 'leaseTimeToLive', 'hashKV', 'memberAdd', 'memberRemove', 'leaveUnstarted', 'memberPromote', 'memberUpdate', 'join',
  'members',
]);

/**
 * A request as it arrived from an authenticated peer. The method is checked; the payload is trusted as the
 * sender's (a member of the same cluster, running this code) like any Raft message it sends.
 */
export function peerRpcOf(method: string, payload: unknown): PeerRpc {
  if (!methods.has(method)) throw new Error(`unknown peer request ${method}`);
  return { method, payload } as PeerRpc;
}
