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

export type {
  RequestContext,
  ResponseHeader,
  Member,
  MemberAddResult,
  LeaseGrantResult,
  LeaseTimeToLiveResult,
  AlarmAction,
  StatusResult,
  HashResult,
  HashKvResult,
  SnapshotSource,
  WatchCreate,
  WatchOut,
  WatchSink,
  WatchStream,
} from './api-types.js';
import type {
  RequestContext,
  ResponseHeader,
  Member,
  MemberAddResult,
  LeaseGrantResult,
  LeaseTimeToLiveResult,
  AlarmAction,
  StatusResult,
  HashResult,
  HashKvResult,
  SnapshotSource,
  WatchSink,
  WatchStream,
} from './api-types.js';

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
