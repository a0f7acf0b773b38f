/**
 * etcd's client-visible errors, byte for byte: the gRPC status code and message of every entry of etcd's
 * api/v3rpc/rpctypes/error.go (3.5, plus 3.6's invalid sort option). Clients (clientv3, etcdctl, the etcd3 npm
 * package, kube-apiserver) recognise errors by these exact messages, so they live in ONE table; nothing else
 * in the server spells an `etcdserver: ...` string.
 *
 * Expected refusals from other layers map here: MvccError codes (src/mvcc/types.ts), AuthError codes
 * (src/auth/types.ts, named after rows of this table) and Raft ProposeError
 * (src/raft/types.ts). Anything else becomes UNKNOWN with its message only (never a stack), as etcd's
 * togRPCError does; a broken invariant (AssertionError) becomes INTERNAL with a fixed message.
 */
import { status as Status } from '@grpc/grpc-js';
import { AuthError } from '../auth/types.js';
import { AssertionError } from '../base/assert.js';
import type { MvccErrorCode } from '../mvcc/types.js';
import { MvccError } from '../mvcc/types.js';
import type { ProposeError } from '../raft/types.js';

interface ErrorSpec {
  readonly status: Status;
  readonly message: string;
}

const spec = (status: Status, message: string): ErrorSpec => ({ status, message });

export const etcdErrors = {
  emptyKey: spec(Status.INVALID_ARGUMENT, 'etcdserver: key is not provided'),
  keyNotFound: spec(Status.INVALID_ARGUMENT, 'etcdserver: key not found'),
  valueProvided: spec(Status.INVALID_ARGUMENT, 'etcdserver: value is provided'),
  leaseProvided: spec(Status.INVALID_ARGUMENT, 'etcdserver: lease is provided'),
  tooManyOps: spec(Status.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request'),
  duplicateKey: spec(Status.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request'),
  invalidSortOption: spec(Status.INVALID_ARGUMENT, 'etcdserver: invalid sort option'),
  compacted: spec(Status.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'),
  futureRev: spec(Status.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision'),
  noSpace: spec(Status.RESOURCE_EXHAUSTED, 'etcdserver: mvcc: database space exceeded'),

  leaseNotFound: spec(Status.NOT_FOUND, 'etcdserver: requested lease not found'),
  leaseExist: spec(Status.FAILED_PRECONDITION, 'etcdserver: lease already exists'),
  leaseTtlTooLarge: spec(Status.OUT_OF_RANGE, 'etcdserver: too large lease TTL'),

  watchCanceled: spec(Status.CANCELLED, 'etcdserver: watch canceled'),

  memberExist: spec(Status.FAILED_PRECONDITION, 'etcdserver: member ID already exist'),
  peerUrlExist: spec(Status.FAILED_PRECONDITION, 'etcdserver: Peer URLs already exists'),
  memberNotEnoughStarted: spec(
    Status.FAILED_PRECONDITION,
    'etcdserver: re-configuration failed due to not enough started members',
  ),
  memberBadUrls: spec(Status.INVALID_ARGUMENT, 'etcdserver: given member URLs are invalid'),
  memberNotFound: spec(Status.NOT_FOUND, 'etcdserver: member not found'),
  memberNotLearner: spec(Status.FAILED_PRECONDITION, 'etcdserver: can only promote a learner member'),
  learnerNotReady: spec(
    Status.FAILED_PRECONDITION,
    'etcdserver: can only promote a learner member which is in sync with leader',
  ),
  tooManyLearners: spec(Status.FAILED_PRECONDITION, 'etcdserver: too many learner members in cluster'),
  clusterIdMismatch: spec(Status.FAILED_PRECONDITION, 'etcdserver: cluster ID mismatch'),

  requestTooLarge: spec(Status.INVALID_ARGUMENT, 'etcdserver: request is too large'),
  tooManyRequests: spec(Status.RESOURCE_EXHAUSTED, 'etcdserver: too many requests'),

  rootUserNotExist: spec(Status.FAILED_PRECONDITION, 'etcdserver: root user does not exist'),
  rootRoleNotExist: spec(Status.FAILED_PRECONDITION, 'etcdserver: root user does not have root role'),
  userAlreadyExist: spec(Status.FAILED_PRECONDITION, 'etcdserver: user name already exists'),
  userEmpty: spec(Status.INVALID_ARGUMENT, 'etcdserver: user name is empty'),
  userNotFound: spec(Status.FAILED_PRECONDITION, 'etcdserver: user name not found'),
  roleAlreadyExist: spec(Status.FAILED_PRECONDITION, 'etcdserver: role name already exists'),
  roleNotFound: spec(Status.FAILED_PRECONDITION, 'etcdserver: role name not found'),
  roleEmpty: spec(Status.INVALID_ARGUMENT, 'etcdserver: role name is empty'),
  authFailed: spec(Status.INVALID_ARGUMENT, 'etcdserver: authentication failed, invalid user ID or password'),
  permissionNotGiven: spec(Status.INVALID_ARGUMENT, 'etcdserver: permission not given'),
  permissionDenied: spec(Status.PERMISSION_DENIED, 'etcdserver: permission denied'),
  roleNotGranted: spec(Status.FAILED_PRECONDITION, 'etcdserver: role is not granted to the user'),
  permissionNotGranted: spec(Status.FAILED_PRECONDITION, 'etcdserver: permission is not granted to the role'),
  authNotEnabled: spec(Status.FAILED_PRECONDITION, 'etcdserver: authentication is not enabled'),
  invalidAuthToken: spec(Status.UNAUTHENTICATED, 'etcdserver: invalid auth token'),
  invalidAuthMgmt: spec(Status.INVALID_ARGUMENT, 'etcdserver: invalid auth management'),
  authOldRevision: spec(Status.INVALID_ARGUMENT, 'etcdserver: revision of auth store is old'),

  noLeader: spec(Status.UNAVAILABLE, 'etcdserver: no leader'),
  notLeader: spec(Status.FAILED_PRECONDITION, 'etcdserver: not leader'),
  leaderChanged: spec(Status.UNAVAILABLE, 'etcdserver: leader changed'),
  notCapable: spec(Status.UNAVAILABLE, 'etcdserver: not capable'),
  stopped: spec(Status.UNAVAILABLE, 'etcdserver: server stopped'),
  timeout: spec(Status.UNAVAILABLE, 'etcdserver: request timed out'),
  timeoutDueToLeaderFail: spec(
    Status.UNAVAILABLE,
    'etcdserver: request timed out, possibly due to previous leader failure',
  ),
  timeoutDueToConnectionLost: spec(
    Status.UNAVAILABLE,
    'etcdserver: request timed out, possibly due to connection lost',
  ),
  timeoutWaitAppliedIndex: spec(
    Status.UNAVAILABLE,
    'etcdserver: request timed out, waiting for the applied index took too long',
  ),
  unhealthy: spec(Status.UNAVAILABLE, 'etcdserver: unhealthy cluster'),
  corrupt: spec(Status.DATA_LOSS, 'etcdserver: corrupt cluster'),
  notSupportedForLearner: spec(Status.UNAVAILABLE, 'etcdserver: rpc not supported for learner'),
  badLeaderTransferee: spec(Status.FAILED_PRECONDITION, 'etcdserver: bad leader transferee'),

  clusterVersionUnavailable: spec(Status.UNAVAILABLE, 'etcdserver: cluster version not found during downgrade'),
  wrongDowngradeVersionFormat: spec(Status.INVALID_ARGUMENT, 'etcdserver: wrong downgrade target version format'),
  invalidDowngradeTargetVersion: spec(Status.INVALID_ARGUMENT, 'etcdserver: invalid downgrade target version'),
  downgradeInProcess: spec(Status.FAILED_PRECONDITION, 'etcdserver: cluster has a downgrade job in progress'),
  noInflightDowngrade: spec(Status.FAILED_PRECONDITION, 'etcdserver: no inflight downgrade job'),

  canceled: spec(Status.CANCELLED, 'etcdserver: request canceled'),
  deadlineExceeded: spec(Status.DEADLINE_EXCEEDED, 'etcdserver: context deadline exceeded'),

  // Not in rpctypes: etcd passes raft.ErrProposalDropped through togRPCError's default (Unknown, raw text).
  proposalDropped: spec(Status.UNKNOWN, 'raft proposal dropped'),
  // Not in rpctypes: etcd's Authenticate passes auth.ErrNoPasswordUser through untranslated (Unknown).
  noPasswordUser: spec(Status.UNKNOWN, 'auth: authentication failed, password was given for no password user'),
  // Watch cancel_reason for a client-chosen id already in use (etcd's mvcc.ErrWatcherDuplicateID text).
  watchDuplicateId: spec(Status.INVALID_ARGUMENT, 'mvcc: duplicate watch ID provided on the WatchStream'),
} as const satisfies Record<string, ErrorSpec>;

export type EtcdErrorCode = keyof typeof etcdErrors;

/** An expected, client-visible refusal. `code` names the row of `etcdErrors`; the message is etcd's. */
export class EtcdError extends Error {
  override name = 'EtcdError';
  readonly status: Status;
  constructor(readonly code: EtcdErrorCode) {
    const row = etcdErrors[code];
    super(row.message);
    this.status = row.status;
  }
}

const mvccToEtcd: Record<MvccErrorCode, EtcdErrorCode> = {
  compacted: 'compacted',
  futureRev: 'futureRev',
  keyNotFound: 'keyNotFound',
  leaseNotFound: 'leaseNotFound',
  leaseExists: 'leaseExist',
  leaseTtlTooLarge: 'leaseTtlTooLarge',
  noSpace: 'noSpace',
};

/**
 * Raft refusals as etcd surfaces them. Where etcd has no direct equivalent the choice is the nearest
 * retryable status a client already handles: a pending conf change is reported as an unhealthy cluster
 * (etcd would time out), a new leader that has not committed in its term as "leader changed".
 */
const proposeToEtcd: Record<ProposeError, EtcdErrorCode> = {
  noLeader: 'noLeader',
  proposalDropped: 'proposalDropped',
  notLeader: 'notLeader',
  confChangePending: 'unhealthy',
  leaderNotCommittedInTerm: 'leaderChanged',
  learnerNotCaughtUp: 'learnerNotReady',
  memberNotFound: 'memberNotFound',
  memberExists: 'memberExist',
  notLearner: 'memberNotLearner',
  wouldLoseQuorum: 'memberNotEnoughStarted',
  // Removing the last data voter while a witness remains: no member could ever lead again.
  noDataVoter: 'memberNotEnoughStarted',
};

export function fromMvccError(e: MvccError): EtcdError {
  return new EtcdError(mvccToEtcd[e.code]);
}

export function fromAuthError(e: AuthError): EtcdError {
  return new EtcdError(e.code);
}

/**
 * etcd 3.5's Maintenance auth checks (Defragment, Snapshot, Hash, HashKV) return server/auth's errors without
 * translating them, so clients see UNKNOWN with auth's own text ("auth: permission denied"), as from 3.4.
 */
const untranslatedAuthMessages: Partial<Record<AuthError['code'], string>> = {
  userEmpty: 'auth: user name is empty',
  userNotFound: 'auth: user not found',
  permissionDenied: 'auth: permission denied',
  invalidAuthToken: 'auth: invalid auth token',
};

export function untranslatedAuthError(e: AuthError): Error {
  return new Error(untranslatedAuthMessages[e.code] ?? etcdErrors[e.code].message);
}

export function fromProposeError(e: ProposeError): EtcdError {
  return new EtcdError(proposeToEtcd[e]);
}

/** What a gRPC handler sends back: `details` is the message clients match on. */
export interface GrpcStatusError {
  code: Status;
  details: string;
}

/** Maps anything thrown below the gRPC layer to the status etcd would send. Never exposes a stack. */
export function toGrpcError(err: unknown): GrpcStatusError {
  if (err instanceof EtcdError) return { code: err.status, details: err.message };
  if (err instanceof MvccError) {
    const row = etcdErrors[mvccToEtcd[err.code]];
    return { code: row.status, details: row.message };
  }
  if (err instanceof AuthError) return { code: etcdErrors[err.code].status, details: etcdErrors[err.code].message };
  if (err instanceof AssertionError) return { code: Status.INTERNAL, details: 'etcetera: internal error' };
  if (err instanceof Error && err.name === 'AbortError') {
    return { code: etcdErrors.canceled.status, details: etcdErrors.canceled.message };
  }
  const text = err instanceof Error ? err.message : String(err);
  return { code: Status.UNKNOWN, details: text.split('\n', 1)[0] ?? '' };
}

/** etcd's errStringToError in reverse: which row a client-side message belongs to (for clients and tests). */
export function etcdErrorCodeOf(message: string): EtcdErrorCode | undefined {
  return byMessage.get(message);
}

const byMessage = new Map<string, EtcdErrorCode>(
  (Object.keys(etcdErrors) as EtcdErrorCode[]).map((code) => [etcdErrors[code].message, code]),
);
