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
 *
 * Codes are the gRPC specification's names (the wire's numbers are api/grpc/grpc-error.ts's business): the
 * replicated member says what went wrong in etcd's words and knows nothing of a gRPC library.
 */
import { AuthError } from '../auth/types.js';
import { AssertionError } from '../base/assert.js';
import type { MvccErrorCode } from '../mvcc/types.js';
import { MvccError } from '../mvcc/types.js';
import type { ProposeError } from '../raft/types.js';

/** gRPC status codes by the specification's names (doc/statuscodes.md), as this table uses them. */
export type GrpcCodeName =
  | 'CANCELLED' | 'UNKNOWN' | 'INVALID_ARGUMENT' | 'DEADLINE_EXCEEDED' | 'NOT_FOUND' | 'PERMISSION_DENIED'
  | 'RESOURCE_EXHAUSTED' | 'FAILED_PRECONDITION' | 'OUT_OF_RANGE' | 'INTERNAL' | 'UNAVAILABLE' | 'DATA_LOSS'
  | 'UNAUTHENTICATED';

interface ErrorSpec {
  readonly status: GrpcCodeName;
  readonly message: string;
}

const spec = (status: GrpcCodeName, message: string): ErrorSpec => ({ status, message });

export const etcdErrors = {
  emptyKey: spec('INVALID_ARGUMENT', 'etcdserver: key is not provided'),
  keyNotFound: spec('INVALID_ARGUMENT', 'etcdserver: key not found'),
  valueProvided: spec('INVALID_ARGUMENT', 'etcdserver: value is provided'),
  leaseProvided: spec('INVALID_ARGUMENT', 'etcdserver: lease is provided'),
  tooManyOps: spec('INVALID_ARGUMENT', 'etcdserver: too many operations in txn request'),
  duplicateKey: spec('INVALID_ARGUMENT', 'etcdserver: duplicate key given in txn request'),
  invalidSortOption: spec('INVALID_ARGUMENT', 'etcdserver: invalid sort option'),
  compacted: spec('OUT_OF_RANGE', 'etcdserver: mvcc: required revision has been compacted'),
  futureRev: spec('OUT_OF_RANGE', 'etcdserver: mvcc: required revision is a future revision'),
  noSpace: spec('RESOURCE_EXHAUSTED', 'etcdserver: mvcc: database space exceeded'),

  leaseNotFound: spec('NOT_FOUND', 'etcdserver: requested lease not found'),
  leaseExist: spec('FAILED_PRECONDITION', 'etcdserver: lease already exists'),
  leaseTtlTooLarge: spec('OUT_OF_RANGE', 'etcdserver: too large lease TTL'),

  watchCanceled: spec('CANCELLED', 'etcdserver: watch canceled'),

  memberExist: spec('FAILED_PRECONDITION', 'etcdserver: member ID already exist'),
  peerUrlExist: spec('FAILED_PRECONDITION', 'etcdserver: Peer URLs already exists'),
  memberNotEnoughStarted: spec(
    'FAILED_PRECONDITION',
    'etcdserver: re-configuration failed due to not enough started members',
  ),
  memberBadUrls: spec('INVALID_ARGUMENT', 'etcdserver: given member URLs are invalid'),
  memberNotFound: spec('NOT_FOUND', 'etcdserver: member not found'),
  memberNotLearner: spec('FAILED_PRECONDITION', 'etcdserver: can only promote a learner member'),
  learnerNotReady: spec(
    'FAILED_PRECONDITION',
    'etcdserver: can only promote a learner member which is in sync with leader',
  ),
  tooManyLearners: spec('FAILED_PRECONDITION', 'etcdserver: too many learner members in cluster'),
  clusterIdMismatch: spec('FAILED_PRECONDITION', 'etcdserver: cluster ID mismatch'),

  requestTooLarge: spec('INVALID_ARGUMENT', 'etcdserver: request is too large'),
  tooManyRequests: spec('RESOURCE_EXHAUSTED', 'etcdserver: too many requests'),

  rootUserNotExist: spec('FAILED_PRECONDITION', 'etcdserver: root user does not exist'),
  rootRoleNotExist: spec('FAILED_PRECONDITION', 'etcdserver: root user does not have root role'),
  userAlreadyExist: spec('FAILED_PRECONDITION', 'etcdserver: user name already exists'),
  userEmpty: spec('INVALID_ARGUMENT', 'etcdserver: user name is empty'),
  userNotFound: spec('FAILED_PRECONDITION', 'etcdserver: user name not found'),
  roleAlreadyExist: spec('FAILED_PRECONDITION', 'etcdserver: role name already exists'),
  roleNotFound: spec('FAILED_PRECONDITION', 'etcdserver: role name not found'),
  roleEmpty: spec('INVALID_ARGUMENT', 'etcdserver: role name is empty'),
  authFailed: spec('INVALID_ARGUMENT', 'etcdserver: authentication failed, invalid user ID or password'),
  permissionNotGiven: spec('INVALID_ARGUMENT', 'etcdserver: permission not given'),
  permissionDenied: spec('PERMISSION_DENIED', 'etcdserver: permission denied'),
  roleNotGranted: spec('FAILED_PRECONDITION', 'etcdserver: role is not granted to the user'),
  permissionNotGranted: spec('FAILED_PRECONDITION', 'etcdserver: permission is not granted to the role'),
  authNotEnabled: spec('FAILED_PRECONDITION', 'etcdserver: authentication is not enabled'),
  invalidAuthToken: spec('UNAUTHENTICATED', 'etcdserver: invalid auth token'),
  invalidAuthMgmt: spec('INVALID_ARGUMENT', 'etcdserver: invalid auth management'),
  authOldRevision: spec('INVALID_ARGUMENT', 'etcdserver: revision of auth store is old'),

  noLeader: spec('UNAVAILABLE', 'etcdserver: no leader'),
  notLeader: spec('FAILED_PRECONDITION', 'etcdserver: not leader'),
  leaderChanged: spec('UNAVAILABLE', 'etcdserver: leader changed'),
  notCapable: spec('UNAVAILABLE', 'etcdserver: not capable'),
  stopped: spec('UNAVAILABLE', 'etcdserver: server stopped'),
  timeout: spec('UNAVAILABLE', 'etcdserver: request timed out'),
  timeoutDueToLeaderFail: spec(
    'UNAVAILABLE',
    'etcdserver: request timed out, possibly due to previous leader failure',
  ),
  timeoutDueToConnectionLost: spec(
    'UNAVAILABLE',
    'etcdserver: request timed out, possibly due to connection lost',
  ),
  timeoutWaitAppliedIndex: spec(
    'UNAVAILABLE',
    'etcdserver: request timed out, waiting for the applied index took too long',
  ),
  unhealthy: spec('UNAVAILABLE', 'etcdserver: unhealthy cluster'),
  corrupt: spec('DATA_LOSS', 'etcdserver: corrupt cluster'),
  notSupportedForLearner: spec('UNAVAILABLE', 'etcdserver: rpc not supported for learner'),
  badLeaderTransferee: spec('FAILED_PRECONDITION', 'etcdserver: bad leader transferee'),

  clusterVersionUnavailable: spec('UNAVAILABLE', 'etcdserver: cluster version not found during downgrade'),
  wrongDowngradeVersionFormat: spec('INVALID_ARGUMENT', 'etcdserver: wrong downgrade target version format'),
  invalidDowngradeTargetVersion: spec('INVALID_ARGUMENT', 'etcdserver: invalid downgrade target version'),
  downgradeInProcess: spec('FAILED_PRECONDITION', 'etcdserver: cluster has a downgrade job in progress'),
  noInflightDowngrade: spec('FAILED_PRECONDITION', 'etcdserver: no inflight downgrade job'),

  canceled: spec('CANCELLED', 'etcdserver: request canceled'),
  deadlineExceeded: spec('DEADLINE_EXCEEDED', 'etcdserver: context deadline exceeded'),

  // Not in rpctypes: etcd passes raft.ErrProposalDropped through togRPCError's default (Unknown, raw text).
  proposalDropped: spec('UNKNOWN', 'raft proposal dropped'),
  // Not in rpctypes: etcd's Authenticate passes auth.ErrNoPasswordUser through untranslated (Unknown).
  noPasswordUser: spec('UNKNOWN', 'auth: authentication failed, password was given for no password user'),
  // Watch cancel_reason for a client-chosen id already in use (etcd's mvcc.ErrWatcherDuplicateID text).
  watchDuplicateId: spec('INVALID_ARGUMENT', 'mvcc: duplicate watch ID provided on the WatchStream'),
} as const satisfies Record<string, ErrorSpec>;

export type EtcdErrorCode = keyof typeof etcdErrors;

/** An expected, client-visible refusal. `code` names the row of `etcdErrors`; the message is etcd's. */
export class EtcdError extends Error {
  override name = 'EtcdError';
  readonly status: GrpcCodeName;
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

/** The gRPC status and message etcd would send for anything thrown below the gRPC layer. Never exposes a stack. */
export function etcdStatusOf(err: unknown): { status: GrpcCodeName; message: string } {
  if (err instanceof EtcdError) return { status: err.status, message: err.message };
  if (err instanceof MvccError) return etcdErrors[mvccToEtcd[err.code]];
  if (err instanceof AuthError) return etcdErrors[err.code];
  if (err instanceof AssertionError) return { status: 'INTERNAL', message: 'etcetera: internal error' };
  if (err instanceof Error && err.name === 'AbortError') return etcdErrors.canceled;
  const text = err instanceof Error ? err.message : String(err);
  return { status: 'UNKNOWN', message: text.split('\n', 1)[0] ?? '' };
}

/**
 * A refusal a peer sent back (`{ error, code }` from a peer or join call) as the error this member throws: the
 * same row of `etcdErrors` when the code names one, else a plain Error with the peer's text. `Object.hasOwn`, not
 * `in`: a code such as "toString" from a confused or hostile peer must not pass as a row.
 */
export function peerRefusal(reply: { readonly error?: unknown; readonly code?: unknown }): Error {
  const code = reply.code;
  if (typeof code === 'string' && Object.hasOwn(etcdErrors, code)) return new EtcdError(code as EtcdErrorCode);
  return new Error(String(reply.error));
}

/** etcd's errStringToError in reverse: which row a client-side message belongs to (for clients and tests). */
export function etcdErrorCodeOf(message: string): EtcdErrorCode | undefined {
  return byMessage.get(message);
}

const byMessage = new Map<string, EtcdErrorCode>(
  (Object.keys(etcdErrors) as EtcdErrorCode[]).map((code) => [etcdErrors[code].message, code]),
);
