/**
 * Auth requests as proposed through Raft (etcd's InternalRaftRequest auth fields) and how apply runs them
 * (etcd's applierV3 auth methods behind authApplierV3). Passwords never enter the log: the request edge
 * hashes them (UserAdd, UserChangePassword) or checks them (Authenticate) first.
 */
import type { AuthStore } from './auth-store.js';
import type { AuthInfo, Permission } from './types.js';

export type AuthRequest =
  | { kind: 'authEnable' }
  | { kind: 'authDisable' }
  | { kind: 'authenticate'; name: string; simpleTokenPrefix: string }
  | { kind: 'userAdd'; name: string; hashedPassword: string; noPassword: boolean }
  | { kind: 'userDelete'; name: string }
  | { kind: 'userChangePassword'; name: string; hashedPassword: string }
  | { kind: 'userGrantRole'; user: string; role: string }
  | { kind: 'userRevokeRole'; name: string; role: string }
  | { kind: 'userGet'; name: string }
  | { kind: 'userList' }
  | { kind: 'roleAdd'; name: string }
  | { kind: 'roleGet'; role: string }
  | { kind: 'roleList' }
  | { kind: 'roleDelete'; role: string }
  | { kind: 'roleGrantPermission'; name: string; perm?: Permission }
  | { kind: 'roleRevokePermission'; role: string; key: Uint8Array; rangeEnd: Uint8Array };

export type AuthRequestKind = AuthRequest['kind'];

const authKinds: ReadonlySet<string> = new Set<AuthRequestKind>([
  'authEnable', 'authDisable', 'authenticate', 'userAdd', 'userDelete', 'userChangePassword', 'userGrantRole',
  'userRevokeRole', 'userGet', 'userList', 'roleAdd', 'roleGet', 'roleList', 'roleDelete', 'roleGrantPermission',
  'roleRevokePermission',
]);

export function isAuthRequest(req: { kind: string }): req is AuthRequest {
  return authKinds.has(req.kind);
}

/**
 * Apply one auth request for the user `ai` speaks for. Every management request needs the root role
 * (etcd's needAdminPermission), except that a user may read itself and the roles it has; Authenticate needs
 * nothing. Throws AuthError for refusals.
 */
export function applyAuthRequest(store: AuthStore, req: AuthRequest, ai: AuthInfo | undefined, index: number): unknown {
  switch (req.kind) {
    case 'authenticate':
      return { ...store.authenticate(req.name, req.simpleTokenPrefix, index), index };
    case 'userGet':
      if (ai === undefined || req.name !== ai.username) store.checkAdmin(ai);
      return { roles: store.userGet(req.name) };
    case 'roleGet':
      if (ai === undefined || !store.hasRole(ai.username, req.role)) store.checkAdmin(ai);
      return { perm: store.roleGet(req.role) };
    default:
      store.checkAdmin(ai);
      return applyAdmin(store, req);
  }
}

function applyAdmin(store: AuthStore, req: Exclude<AuthRequest, { kind: 'authenticate' | 'userGet' | 'roleGet' }>): unknown {
  switch (req.kind) {
    case 'authEnable':
      return store.enable();
    case 'authDisable':
      return store.disable();
    case 'userAdd':
      return store.userAdd(req.name, req.hashedPassword, req.noPassword);
    case 'userDelete':
      return store.userDelete(req.name);
    case 'userChangePassword':
      return store.userChangePassword(req.name, req.hashedPassword);
    case 'userGrantRole':
      return store.userGrantRole(req.user, req.role);
    case 'userRevokeRole':
      return store.userRevokeRole(req.name, req.role);
    case 'userList':
      return { users: store.userList() };
    case 'roleAdd':
      return store.roleAdd(req.name);
    case 'roleList':
      return { roles: store.roleList() };
    case 'roleDelete':
      return store.roleDelete(req.role);
    case 'roleGrantPermission':
      return store.roleGrantPermission(req.name, req.perm);
    case 'roleRevokePermission':
      return store.roleRevokePermission(req.role, req.key, req.rangeEnd);
  }
}
