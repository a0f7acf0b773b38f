/**
 * What apply answers for each kind of proposed request, so a call site gets its result type from the
 * request it proposed instead of casting `unknown`. Apply (node/apply/apply.ts, auth/requests.ts) is the one writer;
 * a kind whose answer nobody reads maps to `unknown`.
 */
import type { Permission } from '../../auth/types.js';
import type { AlarmMember, DeleteRangeResponse, PutResponse, TxnResponse } from '../../mvcc/types.js';
import type { LeaseGrantResult } from '../api-types.js';
import type { RaftRequest } from '../driver/raft-request.js';

export interface ProposeResults {
  put: PutResponse;
  deleteRange: DeleteRangeResponse;
  txn: TxnResponse;
  compact: { physicalDone: Promise<void> };
  leaseGrant: LeaseGrantResult;
  alarm: AlarmMember | undefined;
  authenticate: { revision: number; index: number };
  userGet: { roles: string[] };
  userList: { users: string[] };
  roleGet: { perm: Permission[] };
  roleList: { roles: string[] };
}

export type ProposeResult<R extends RaftRequest> = R['kind'] extends keyof ProposeResults ? ProposeResults[R['kind']] : unknown;
