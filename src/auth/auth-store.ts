/**
 * The replicated auth state (etcd's server/auth/store.go): whether auth is enabled, the auth revision, users
 * and roles. Changed only by applying committed entries, so every member holds the same state at the same
 * applied index; persisted through the apply write buffer in the 'auth', 'authUsers' and 'authRoles' buckets
 * (etcd's bucket names and record formats), so snapshots carry it and a restart reloads it.
 *
 * The auth revision counts changes as etcd does: every user or role change bumps it, and so does disabling
 * auth; enabling does not. A request records the revision its permissions were judged at; apply refuses one
 * judged before a later change ("revision of auth store is old"), so a revoked permission is never used.
 */
import { assert } from '../base/assert.js';
import { compareBytes, equalBytes, utf8 } from '../base/bytes.js';
import type { Backend, WriteBuffer } from '../mvcc/backend.js';
import { decodeRole, decodeUser, encodeRole, encodeUser } from './authpb.js';
import { isValidPermissionRange, RangePerms } from './range-perms.js';
import { AuthError, PermType, rootRole, rootUser, type AuthInfo, type Permission, type Role, type User } from './types.js';

const enabledKey = utf8('authEnabled');
const revisionKey = utf8('authRevision');

/** Side effects outside the replicated state: the token providers of this member. */
export interface AuthHooks {
  /** Auth was turned on or off (also called once when the hooks are set). */
  enabledChanged(enabled: boolean): void;
  /** The user was deleted or its password changed: its tokens stop working (etcd's invalidateUser). */
  userInvalidated(name: string): void;
  /** A committed Authenticate: the simple token `${prefix}.${index}` now names this user. */
  authenticated(name: string, simpleTokenPrefix: string, index: number): void;
}

const noHooks: AuthHooks = { enabledChanged() {}, userInvalidated() {}, authenticated() {} };

export class AuthStore {
  readonly #buffer: WriteBuffer;
  #enabled = false;
  #revision = 1;
  readonly #users = new Map<string, User>();
  readonly #roles = new Map<string, Role>();
  /** Merged permissions per user, dropped on every change (etcd's rangePermCache). */
  readonly #perms = new Map<string, RangePerms>();
  #hooks: AuthHooks = noHooks;

  private constructor(buffer: WriteBuffer) {
    this.#buffer = buffer;
  }

  static async load(backend: Backend, buffer: WriteBuffer): Promise<AuthStore> {
    const s = new AuthStore(buffer);
    const enabled = await backend.get('auth', enabledKey);
    s.#enabled = enabled !== undefined && enabled.length === 1 && enabled[0] === 1;
    const rev = await backend.get('auth', revisionKey);
    // etcd writes revision 1 when it creates the store; a backend without the key is at 1.
    if (rev !== undefined) s.#revision = Number(new DataView(rev.buffer, rev.byteOffset, rev.byteLength).getBigUint64(0));
    assert(Number.isSafeInteger(s.#revision) && s.#revision >= 1, `auth revision ${s.#revision}`);
    for await (const [, value] of backend.scan('authUsers')) {
      const u = decodeUser(value);
      s.#users.set(u.name, u);
    }
    for await (const [, value] of backend.scan('authRoles')) {
      const r = decodeRole(value);
      s.#roles.set(r.name, r);
    }
    return s;
  }

  setHooks(hooks: AuthHooks): void {
    this.#hooks = hooks;
    hooks.enabledChanged(this.#enabled);
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  get revision(): number {
    return this.#revision;
  }

  user(name: string): User | undefined {
    return this.#users.get(name);
  }

  // ---- Apply: enable, disable, authenticate ----

  enable(): void {
    if (this.#enabled) return;
    const root = this.#users.get(rootUser);
    if (root === undefined) throw new AuthError('rootUserNotExist');
    if (!root.roles.includes(rootRole)) throw new AuthError('rootRoleNotExist');
    this.#enabled = true;
    this.#buffer.put('auth', enabledKey, new Uint8Array([1]));
    this.#perms.clear();
    this.#hooks.enabledChanged(true);
  }

  disable(): void {
    if (!this.#enabled) return;
    this.#enabled = false;
    this.#buffer.put('auth', enabledKey, new Uint8Array([0]));
    this.#commit();
    this.#hooks.enabledChanged(false);
  }

  /** The password was checked at the request edge; apply confirms the user may still log in. */
  authenticate(name: string, simpleTokenPrefix: string, index: number): { revision: number } {
    if (!this.#enabled) throw new AuthError('authNotEnabled');
    const u = this.#users.get(name);
    if (u === undefined || u.noPassword) throw new AuthError('authFailed');
    this.#hooks.authenticated(name, simpleTokenPrefix, index);
    return { revision: this.#revision };
  }

  // ---- Apply: users ----

  userAdd(name: string, hashedPassword: string, noPassword: boolean): void {
    if (name === '') throw new AuthError('userEmpty');
    if (this.#users.has(name)) throw new AuthError('userAlreadyExist');
    this.#putUser({ name, password: noPassword ? '' : hashedPassword, roles: [], noPassword });
    this.#commit();
  }

  userDelete(name: string): void {
    if (this.#enabled && name === rootUser) throw new AuthError('invalidAuthMgmt');
    if (!this.#users.has(name)) throw new AuthError('userNotFound');
    this.#users.delete(name);
    this.#buffer.del('authUsers', utf8(name));
    this.#commit();
    this.#hooks.userInvalidated(name);
  }

  userChangePassword(name: string, hashedPassword: string): void {
    const u = this.#requireUser(name);
    this.#putUser({ ...u, password: u.noPassword ? '' : hashedPassword });
    this.#commit();
    this.#hooks.userInvalidated(name);
  }

  userGrantRole(name: string, role: string): void {
    const u = this.#requireUser(name);
    // The root role need not exist as a role to be granted (etcd).
    if (role !== rootRole && !this.#roles.has(role)) throw new AuthError('roleNotFound');
    if (u.roles.includes(role)) return; // etcd ignores a repeated grant, without a revision bump
    this.#putUser({ ...u, roles: [...u.roles, role].sort(compareStrings) });
    this.#commit();
  }

  userRevokeRole(name: string, role: string): void {
    if (this.#enabled && name === rootUser && role === rootRole) throw new AuthError('invalidAuthMgmt');
    const u = this.#requireUser(name);
    if (!u.roles.includes(role)) throw new AuthError('roleNotGranted');
    this.#putUser({ ...u, roles: u.roles.filter((r) => r !== role) });
    this.#commit();
  }

  userGet(name: string): string[] {
    return [...this.#requireUser(name).roles];
  }

  userList(): string[] {
    return [...this.#users.keys()].sort(compareStrings);
  }

  // ---- Apply: roles ----

  roleAdd(name: string): void {
    if (name === '') throw new AuthError('roleEmpty');
    if (this.#roles.has(name)) throw new AuthError('roleAlreadyExist');
    this.#putRole({ name, keyPermission: [] });
    this.#commit();
  }

  roleDelete(name: string): void {
    if (this.#enabled && name === rootRole) throw new AuthError('invalidAuthMgmt');
    if (!this.#roles.has(name)) throw new AuthError('roleNotFound');
    this.#roles.delete(name);
    this.#buffer.del('authRoles', utf8(name));
    for (const u of [...this.#users.values()]) {
      if (u.roles.includes(name)) this.#putUser({ ...u, roles: u.roles.filter((r) => r !== name) });
    }
    this.#commit();
  }

  roleGet(name: string): Permission[] {
    return this.#requireRole(name).keyPermission.map((p) => ({ ...p }));
  }

  roleList(): string[] {
    return [...this.#roles.keys()].sort(compareStrings);
  }

  roleGrantPermission(name: string, perm: Permission | undefined): void {
    if (perm === undefined) throw new AuthError('permissionNotGiven');
    if (!isValidPermissionRange(perm.key, perm.rangeEnd)) throw new AuthError('invalidAuthMgmt');
    const role = this.#requireRole(name);
    const same = (p: Permission): boolean => equalBytes(p.key, perm.key) && equalBytes(p.rangeEnd, perm.rangeEnd);
    const kept = role.keyPermission.filter((p) => !same(p));
    // An existing permission on the same range changes type; etcd keeps permissions sorted by key.
    const keyPermission = [...kept, { ...perm }].sort(
      (a, b) => compareBytes(a.key, b.key) || compareBytes(a.rangeEnd, b.rangeEnd),
    );
    this.#putRole({ name, keyPermission });
    this.#commit();
  }

  roleRevokePermission(name: string, key: Uint8Array, rangeEnd: Uint8Array): void {
    const role = this.#requireRole(name);
    const keyPermission = role.keyPermission.filter((p) => !equalBytes(p.key, key) || !equalBytes(p.rangeEnd, rangeEnd));
    if (keyPermission.length === role.keyPermission.length) throw new AuthError('permissionNotGranted');
    this.#putRole({ name, keyPermission });
    this.#commit();
  }

  // ---- Checks (apply and the request edge) ----

  /** Whether `name` has the root role, and so every permission. */
  hasRootRole(name: string): boolean {
    return this.#users.get(name)?.roles.includes(rootRole) === true;
  }

  hasRole(name: string, role: string): boolean {
    return this.#users.get(name)?.roles.includes(role) === true;
  }

  /** etcd's IsAdminPermitted: with auth enabled, only a user with the root role (no revision check). */
  checkAdmin(ai: AuthInfo | undefined): void {
    if (!this.#enabled) return;
    if (ai === undefined || ai.username === '') throw new AuthError('userEmpty');
    if (!this.#users.has(ai.username)) throw new AuthError('userNotFound');
    if (!this.hasRootRole(ai.username)) throw new AuthError('permissionDenied');
  }

  checkRead(ai: AuthInfo | undefined, key: Uint8Array, rangeEnd: Uint8Array): void {
    this.#checkOp(ai, key, rangeEnd, PermType.Read);
  }

  checkWrite(ai: AuthInfo | undefined, key: Uint8Array, rangeEnd: Uint8Array): void {
    this.#checkOp(ai, key, rangeEnd, PermType.Write);
  }

  /** etcd's isOpPermitted. */
  #checkOp(ai: AuthInfo | undefined, key: Uint8Array, rangeEnd: Uint8Array, type: typeof PermType.Read | typeof PermType.Write): void {
    if (!this.#enabled) return;
    if (ai === undefined || ai.revision === 0) throw new AuthError('userEmpty');
    if (ai.revision < this.#revision) throw new AuthError('authOldRevision');
    const u = this.#users.get(ai.username);
    if (u === undefined) throw new AuthError('permissionDenied');
    if (u.roles.includes(rootRole)) return;
    if (!this.#permsOf(u).permits(type, key, rangeEnd)) throw new AuthError('permissionDenied');
  }

  #permsOf(u: User): RangePerms {
    let perms = this.#perms.get(u.name);
    if (perms === undefined) {
      const roles = u.roles.map((r) => this.#roles.get(r)).filter((r): r is Role => r !== undefined);
      perms = new RangePerms(roles);
      this.#perms.set(u.name, perms);
    }
    return perms;
  }

  // ---- Internals ----

  #requireUser(name: string): User {
    const u = this.#users.get(name);
    if (u === undefined) throw new AuthError('userNotFound');
    return u;
  }

  #requireRole(name: string): Role {
    const r = this.#roles.get(name);
    if (r === undefined) throw new AuthError('roleNotFound');
    return r;
  }

  #putUser(u: User): void {
    this.#users.set(u.name, u);
    this.#buffer.put('authUsers', utf8(u.name), encodeUser(u));
  }

  #putRole(r: Role): void {
    this.#roles.set(r.name, r);
    this.#buffer.put('authRoles', utf8(r.name), encodeRole(r));
  }

  /** etcd's commitRevision: every change bumps the revision and drops the merged permissions. */
  #commit(): void {
    this.#revision += 1;
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(this.#revision));
    this.#buffer.put('auth', revisionKey, b);
    this.#perms.clear();
  }
}

/** Go's sort.Strings order: by UTF-8 bytes. */
function compareStrings(a: string, b: string): number {
  return compareBytes(utf8(a), utf8(b));
}
