/**
 * Auth vocabulary, shaped like etcd's authpb messages (server/auth, api/authpb): users with bcrypt password
 * hashes and role names, roles with key permissions. Names are strings (etcd stores them as bytes of a Go
 * string); keys are bytes. The deterministic core of auth (this directory) never hashes a password, reads a
 * clock or draws a random number: the server does that at the request edge and proposes the outcome.
 */

/** authpb.Permission.Type: the numbers are the wire enum. */
export const PermType = { Read: 0, Write: 1, ReadWrite: 2 } as const;
export type PermType = (typeof PermType)[keyof typeof PermType];

export interface Permission {
  permType: PermType;
  key: Uint8Array;
  /** Empty: the single key. "\0": every key ≥ key. Otherwise [key, rangeEnd). */
  rangeEnd: Uint8Array;
}

export interface User {
  name: string;
  /** The bcrypt hash ("$2a$10$…"); empty for a user added with no_password. */
  password: string;
  /** Sorted, unique (etcd keeps them sorted to binary-search on grant). */
  roles: string[];
  noPassword: boolean;
}

export interface Role {
  name: string;
  /** Sorted by key (etcd's permSlice), then range end. */
  keyPermission: Permission[];
}

/** Who a request speaks for and at which auth revision its permissions were checked (etcd's AuthInfo). */
export interface AuthInfo {
  username: string;
  revision: number;
}

export const rootUser = 'root';
export const rootRole = 'root';

/** Expected refusals of the auth store; the names are rows of src/node/errors.ts's table. */
export type AuthErrorCode =
  | 'rootUserNotExist'
  | 'rootRoleNotExist'
  | 'userAlreadyExist'
  | 'userEmpty'
  | 'userNotFound'
  | 'roleAlreadyExist'
  | 'roleNotFound'
  | 'roleEmpty'
  | 'authFailed'
  | 'noPasswordUser'
  | 'permissionNotGiven'
  | 'permissionDenied'
  | 'roleNotGranted'
  | 'permissionNotGranted'
  | 'authNotEnabled'
  | 'invalidAuthToken'
  | 'invalidAuthMgmt'
  | 'authOldRevision';

export class AuthError extends Error {
  override name = 'AuthError';
  constructor(readonly code: AuthErrorCode) {
    super(code);
  }
}
