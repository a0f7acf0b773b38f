/**
 * The values that cross the boundary between the client front ends and the node (server-api.ts): request
 * context, members, results, watch streams. A leaf: the node's own parts (membership, the request pipeline,
 * access control) import these without importing EtcdApi, which names them all.
 */
import type { WatchCreateRequest, WatchResponse, WatchSend } from '../mvcc/watch-types.js';
import type { Member } from '../storage/members-bucket.js';

/** What each call carries from the client besides its request. */
export interface RequestContext {
  /**
   * gRPC metadata `hasleader: true` (kube-apiserver sets it on every request): the caller requires a leader.
   * The gRPC layer already refused the call if `hasLeader()` was false when it arrived; the core should also
   * fail the request with noLeader if the leader is lost while it waits.
   */
  readonly requireLeader: boolean;
  /** Aborted when the client cancels or its deadline passes; pending work may stop waiting. */
  readonly signal: AbortSignal;
  /** The auth token of gRPC metadata `token` (or the gateway's `authorization`), as etcd reads it. */
  readonly token?: string | undefined;
  /** The common name of the client's verified TLS certificate (the user under --client-cert-auth). */
  readonly certCommonName?: string | undefined;
  /**
   * Where the call comes from, for what slows password guesses down per client rather than per user
   * (access/password-checks.ts): the client's IP address without its port, an IPv6 address's /64 (one host
   * gets a whole /64 to pick from), `local` for an in-process client. Front ends compute it when read, so
   * calls that never authenticate pay nothing. Undefined: all such calls count as one source.
   */
  readonly source?: string | undefined;
}

export interface ResponseHeader {
  clusterId: bigint;
  memberId: bigint;
  /** 0 is sent as "no revision" (etcd's Cluster responses). */
  revision: number;
  raftTerm: number;
}

/** A member as the members bucket keeps it; defined with the bucket, below the node (storage/members-bucket.ts). */
export type { Member };

export interface MemberAddResult {
  member: Member;
  members: Member[];
}

export interface LeaseGrantResult {
  id: bigint;
  ttlSeconds: number;
}

export interface LeaseTimeToLiveResult {
  id: bigint;
  /** Remaining seconds. */
  ttlSeconds: number;
  grantedTtlSeconds: number;
  /** Attached keys, only when requested. */
  keys: Uint8Array[];
}

export type AlarmAction = 'get' | 'activate' | 'deactivate';

export interface StatusResult {
  dbSizeBytes: number;
  dbSizeInUseBytes: number;
  /** 0n: no leader known. */
  leader: bigint;
  /** Raft committed index (etcd's raftIndex). */
  raftIndex: number;
  raftTerm: number;
  raftAppliedIndex: number;
  isLearner: boolean;
  /** Active alarms as etcd prints them, e.g. "memberID:1234 alarm:NOSPACE "; "etcdserver: no leader" is added by the gRPC layer. */
  errors: string[];
}

export interface HashResult {
  hash: number;
  /** The store revision the hash covers (header.revision). */
  revision: number;
}

export interface HashKvResult extends HashResult {
  compactRevision: number;
}

/** A consistent copy of the backend for Maintenance.Snapshot. */
export interface SnapshotSource {
  /** Exact number of bytes `chunks` yields. */
  sizeBytes: number;
  /**
   * The bytes, in order. The gRPC layer pads them with zeros to a multiple of 512 and appends their SHA-256
   * (etcdctl `snapshot save` requires size % 512 == 32), so the format must tolerate trailing zero padding.
   */
  chunks: AsyncIterable<Uint8Array>;
}

// ---- Watch ----
// The watch vocabulary is src/mvcc's (watch-types.ts), so the core can hand out WatchHub streams directly.
// Creates are answered through the sink before any event of that watcher: `created: true` with its id, or
// `created: true, canceled: true, watchId: -1` and etcd's cancel reason (duplicate id, ...); a compacted start
// revision is answered `created`, then `canceled` with `compactRevision`. Progress requests are answered with
// `watchId: -1` only once every watcher of the stream has caught up (etcd #15220). Oversized responses of a
// watcher created with `fragment` arrive already split (`fragment: true` on all pieces but the last).

export type WatchCreate = WatchCreateRequest;
export type WatchOut = WatchResponse;

/** Where a watch stream delivers its responses, in order. Returns false when the transport is full. */
export interface WatchSink {
  send: WatchSend;
}

/** One gRPC Watch stream (mvcc's WatchStream satisfies it). */
export interface WatchStream {
  create(req: WatchCreate): void;
  /** Answered `canceled: true` with its id; unknown ids are ignored (as etcd). */
  cancel(watchId: number): unknown;
  requestProgress(): void;
  /** The transport drained (after send returned false). */
  resume(): void;
  /** The client went away: drop every watcher of this stream. Idempotent. */
  close(): void;
}
