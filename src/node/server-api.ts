/**
 * The boundary between the gRPC layer (src/api/grpc) and the server core (src/node/etcd-server.ts).
 *
 * The gRPC services decode the wire request and check require-leader as etcd's api/v3rpc does, call exactly
 * one method here, and encode the answer, filling every response header from `header()`. The core never sees
 * protobuf; the gRPC layer never sees Raft, the WAL or the store.
 *
 * Errors: methods reject with EtcdError (src/node/errors.ts), MvccError (src/mvcc/types.ts) or anything
 * else (→ UNKNOWN). Each method lists the refusals a client may observe. Common to every method that goes
 * through Raft or a linearizable read: noLeader, leaderChanged, timeout, stopped, tooManyRequests (apply lags
 * commit by more than applyLagEntriesMax or pendingProposalsMax is reached), canceled (ctx.signal aborted).
 */
import type {
  AlarmMember,
  AlarmType,
  CompactionRequest,
  DeleteRangeRequest,
  DeleteRangeResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from '../mvcc/types.js';
import type { AuthApi } from './access/auth-api.js';
import type { WatchCreateRequest, WatchResponse, WatchSend } from '../mvcc/watch-types.js';

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
}

export interface ResponseHeader {
  clusterId: bigint;
  memberId: bigint;
  /** 0 is sent as "no revision" (etcd's Cluster responses). */
  revision: number;
  raftTerm: number;
}

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

export interface EtcdApi {
  /** The Auth service's core (users, roles, tokens); optional so a core without auth need not have it. */
  readonly authApi?: AuthApi;
  /** Header for a response; `revision` omitted: the store's current revision. Cheap and synchronous. */
  header(revision?: number): ResponseHeader;
  /** Whether this member currently knows a leader (require-leader checks, closing hasleader streams). */
  hasLeader(): boolean;
  /**
   * Whether this member is a learner. If implemented, the gRPC layer serves a learner as etcd's interceptors
   * do: only Status, serializable Range and the Snapshot stream; everything else answers
   * "etcdserver: rpc not supported for learner". Optional, so a core without learners need not implement it.
   */
  isLearner?(): boolean;

  // ---- KV ----
  // Every KV method first runs etcd's request checks (src/node/request/validate.ts), whoever calls it: emptyKey,
  // invalidSortOption, valueProvided, leaseProvided, tooManyOps, duplicateKey, requestTooLarge.
  /**
   * Linearizable (ReadIndex) unless `serializable`. Errors: compacted, futureRev, plus the common ones (not
   * tooManyRequests for serializable reads). `revision` in the result is the store's current revision.
   */
  range(req: RangeRequest, ctx: RequestContext): Promise<RangeResponse>;
  /** Errors: leaseNotFound, keyNotFound (ignoreValue/ignoreLease on a missing key), noSpace, requestTooLarge. */
  put(req: PutRequest, ctx: RequestContext): Promise<PutResponse>;
  /** Errors: requestTooLarge. */
  deleteRange(req: DeleteRangeRequest, ctx: RequestContext): Promise<DeleteRangeResponse>;
  /**
   * Errors: as range/put for its operations (the first failing one), noSpace. Sub-responses carry their own
   * revision (the gRPC layer puts it into each sub-header).
   */
  txn(req: TxnRequest, ctx: RequestContext): Promise<TxnResponse>;
  /** Errors: compacted (at or below the compacted revision), futureRev. Returns the current store revision. */
  compact(req: CompactionRequest, ctx: RequestContext): Promise<{ revision: number }>;

  // ---- Lease ----
  /** `id` 0n: the server picks one. Errors: leaseExist, leaseTtlTooLarge, noSpace. */
  leaseGrant(req: { ttlSeconds: number; id: bigint }, ctx: RequestContext): Promise<LeaseGrantResult>;
  /** Deletes the attached keys. Errors: leaseNotFound. Returns the store revision after the revoke. */
  leaseRevoke(id: bigint, ctx: RequestContext): Promise<{ revision: number }>;
  /**
   * Renew on the leader (forwarded if this member is a follower). Resolves to the new TTL in seconds.
   * Errors: leaseNotFound (the service answers TTL 0 as etcd), noLeader, notLeader on a learner.
   */
  leaseKeepAlive(id: bigint, ctx: RequestContext): Promise<number>;
  /** Errors: leaseNotFound (the service answers TTL -1 as etcd). */
  leaseTimeToLive(id: bigint, keys: boolean, ctx: RequestContext): Promise<LeaseTimeToLiveResult>;
  /** Every live lease id. */
  leaseLeases(ctx: RequestContext): Promise<bigint[]>;

  // ---- Watch ----
  /** Opens the core side of one Watch stream; the gRPC layer closes it when the client goes away. */
  openWatchStream(sink: WatchSink, ctx: RequestContext): WatchStream;

  // ---- Cluster ----
  /** Errors: memberBadUrls, peerUrlExist, memberExist, tooManyLearners, memberNotEnoughStarted, unhealthy. */
  memberAdd(req: { peerUrls: string[]; isLearner: boolean }, ctx: RequestContext): Promise<MemberAddResult>;
  /** Errors: memberNotFound, memberNotEnoughStarted (strict reconfig check). Returns the members after. */
  memberRemove(id: bigint, ctx: RequestContext): Promise<Member[]>;
  /** Errors: memberNotFound, peerUrlExist, memberBadUrls. */
  memberUpdate(req: { id: bigint; peerUrls: string[] }, ctx: RequestContext): Promise<Member[]>;
  /** `linearizable`: confirm with a ReadIndex first. */
  memberList(linearizable: boolean, ctx: RequestContext): Promise<Member[]>;
  /** Errors: memberNotFound, memberNotLearner, learnerNotReady. */
  memberPromote(id: bigint, ctx: RequestContext): Promise<Member[]>;

  // ---- Maintenance ----
  /** `memberId` 0n / alarm 'NONE' select all for get and deactivate. Returns the affected alarms. */
  alarm(
    req: { action: AlarmAction; memberId: bigint; alarm: AlarmType },
    ctx: RequestContext,
  ): Promise<AlarmMember[]>;
  status(ctx: RequestContext): Promise<StatusResult>;
  defragment(ctx: RequestContext): Promise<void>;
  hash(ctx: RequestContext): Promise<HashResult>;
  /** `revision` 0: current. Errors: compacted, futureRev. */
  hashKV(revision: number, ctx: RequestContext): Promise<HashKvResult>;
  snapshot(ctx: RequestContext): Promise<SnapshotSource>;
  /** Errors: notLeader (this member is not the leader), badLeaderTransferee, memberNotFound, timeout. */
  moveLeader(targetId: bigint, ctx: RequestContext): Promise<void>;
}
