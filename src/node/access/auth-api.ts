/**
 * The Auth service's core (etcd's v3_server.go auth methods): every change is proposed through Raft with the
 * caller's auth info and judged in apply (root needed, see src/auth/requests.ts). What must not enter the log
 * happens here first: passwords are bcrypt-hashed (UserAdd, UserChangePassword) or compared (Authenticate)
 * off the event loop and bounded (password-checks.ts), and the random part of a simple token is drawn here.
 *
 * A hash is computed only for a caller apply would let through (issue 31, item 4): etcd 3.4 hashes in apply,
 * after its admin check, so 100 anonymous UserAdd callers cost it nothing, where hashing first here cost
 * 410 bcrypt runs in 30 s and starved logins. So the same check apply makes (AuthStore.checkAdmin, then
 * etcd's empty-name check) runs against the applied state before hashing, and answers with apply's error.
 * Apply still judges the entry: the state may move in between.
 */
import { authenticateAttemptsMax } from '../../base/limits.js';
import type { AuthStore } from '../../auth/auth-store.js';
import type { AuthRequest } from '../../auth/requests.js';
import { AuthError, type Permission } from '../../auth/types.js';
import type { RequestContext } from '../api-types.js';
import type { RaftRequest } from '../driver/raft-request.js';
import type { ProposeResult } from '../request/propose-results.js';
import type { AuthGate } from './auth-gate.js';
import { SimpleTokens } from './simple-tokens.js';
import { PasswordChecks, type PasswordChecksOptions, type PasswordCounts } from './password-checks.js';

export interface AuthApiHost {
  auth(): AuthStore;
  gate: AuthGate;
  awaitLeader(ctx: RequestContext): Promise<void>;
  linearizableBarrier(ctx: RequestContext): Promise<void>;
  propose<R extends RaftRequest>(req: R, signal?: AbortSignal): Promise<ProposeResult<R>>;
  bcryptCost: number;
  /** The password checks' clock and comparison (defaults: wall time, bcrypt on the thread pool). */
  passwords?: PasswordChecksOptions;
  /** Draws a simple token's random prefix (default: SimpleTokens.genPrefix, from node:crypto). */
  tokenPrefix?: () => string;
}

export interface UserAddRequest {
  name: string;
  password: string;
  /** A bcrypt hash computed by the client (etcd 3.6 clients); used when `password` is empty. */
  hashedPassword: string;
  noPassword: boolean;
}

/** What the gRPC Auth service calls; each method rejects with AuthError / EtcdError as etcd's. */
export class AuthApi {
  readonly #h: AuthApiHost;
  readonly #passwords: PasswordChecks;
  readonly #tokenPrefix: () => string;

  constructor(host: AuthApiHost) {
    this.#h = host;
    this.#passwords = new PasswordChecks(host.passwords);
    this.#tokenPrefix = host.tokenPrefix ?? (() => SimpleTokens.genPrefix());
  }

  async #propose<R extends AuthRequest>(req: R, ctx: RequestContext): Promise<ProposeResult<R>> {
    await this.#h.awaitLeader(ctx);
    const auth = await this.#h.gate.info(ctx);
    return this.#h.propose(auth === undefined ? req : { ...req, auth }, ctx.signal);
  }

  async authEnable(ctx: RequestContext): Promise<void> {
    await this.#propose({ kind: 'authEnable' }, ctx);
  }

  async authDisable(ctx: RequestContext): Promise<void> {
    await this.#propose({ kind: 'authDisable' }, ctx);
  }

  async authStatus(ctx: RequestContext): Promise<{ enabled: boolean; authRevision: number }> {
    await this.#h.linearizableBarrier(ctx);
    const store = this.#h.auth();
    return { enabled: store.enabled, authRevision: store.revision };
  }

  /**
   * etcd's Authenticate: check the password against the applied state, propose the login, and retry if the
   * auth state moved in between (the password may have changed). The entry carries no password.
   */
  async authenticate(name: string, password: string, ctx: RequestContext): Promise<string> {
    await this.#h.linearizableBarrier(ctx);
    for (let attempt = 0; attempt < authenticateAttemptsMax; attempt++) {
      const checkedRevision = await this.#checkPassword(name, password, ctx);
      const simpleTokenPrefix = this.#tokenPrefix();
      const r = await this.#h.propose({ kind: 'authenticate', name, simpleTokenPrefix }, ctx.signal);
      if (checkedRevision === this.#h.auth().revision) return this.#h.gate.tokens.issue(name, simpleTokenPrefix, r.index, r.revision);
    }
    throw new AuthError('authOldRevision');
  }

  async #checkPassword(name: string, password: string, ctx: RequestContext): Promise<number> {
    const store = this.#h.auth();
    if (!store.enabled) throw new AuthError('authNotEnabled');
    const revision = store.revision;
    const u = store.user(name);
    if (u === undefined) throw new AuthError('authFailed');
    if (u.noPassword) throw new AuthError('noPasswordUser');
    if (!(await this.#passwords.verify(name, password, u.password, ctx.source))) throw new AuthError('authFailed');
    return revision;
  }

  /** bcrypt's work so far (the metrics read it). */
  passwordCounts(): Readonly<PasswordCounts> {
    return this.#passwords.counts();
  }

  /**
   * The hash for a UserAdd or UserChangePassword, once the caller passed apply's checks against the applied
   * state, in etcd 3.4's order (apply_auth.go: IsAdminPermitted; then, for UserAdd, auth/store.go's empty
   * name). A refusal is confirmed after a ReadIndex: this member may not have applied yet a grant or an auth
   * disable the cluster has, and must not refuse what apply would accept.
   */
  async #hashFor(r: { name: string; password: string; hashedPassword: string }, ctx: RequestContext, nameRequired: boolean): Promise<string> {
    await this.#h.awaitLeader(ctx);
    try {
      await this.#checkBeforeHash(r.name, ctx, nameRequired);
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      await this.#h.linearizableBarrier(ctx);
      await this.#checkBeforeHash(r.name, ctx, nameRequired);
    }
    if (r.password === '' && r.hashedPassword !== '') return r.hashedPassword;
    return this.#passwords.hash(r.password, this.#h.bcryptCost);
  }

  async #checkBeforeHash(name: string, ctx: RequestContext, nameRequired: boolean): Promise<void> {
    this.#h.auth().checkAdmin(await this.#h.gate.info(ctx));
    if (nameRequired && name === '') throw new AuthError('userEmpty');
  }

  async userAdd(r: UserAddRequest, ctx: RequestContext): Promise<void> {
    const hashedPassword = r.noPassword ? '' : await this.#hashFor(r, ctx, true);
    await this.#propose({ kind: 'userAdd', name: r.name, hashedPassword, noPassword: r.noPassword }, ctx);
  }

  async userGet(name: string, ctx: RequestContext): Promise<string[]> {
    return (await this.#propose({ kind: 'userGet', name }, ctx)).roles;
  }

  async userList(ctx: RequestContext): Promise<string[]> {
    return (await this.#propose({ kind: 'userList' }, ctx)).users;
  }

  async userDelete(name: string, ctx: RequestContext): Promise<void> {
    await this.#propose({ kind: 'userDelete', name }, ctx);
  }

  async userChangePassword(r: { name: string; password: string; hashedPassword: string }, ctx: RequestContext): Promise<void> {
    const hashedPassword = await this.#hashFor(r, ctx, false);
    await this.#propose({ kind: 'userChangePassword', name: r.name, hashedPassword }, ctx);
  }

  async userGrantRole(user: string, role: string, ctx: RequestContext): Promise<void> {
    await this.#propose({ kind: 'userGrantRole', user, role }, ctx);
  }

  async userRevokeRole(name: string, role: string, ctx: RequestContext): Promise<void> {
    await this.#propose({ kind: 'userRevokeRole', name, role }, ctx);
  }

  async roleAdd(name: string, ctx: RequestContext): Promise<void> {
    await this.#propose({ kind: 'roleAdd', name }, ctx);
  }

  async roleGet(role: string, ctx: RequestContext): Promise<Permission[]> {
    return (await this.#propose({ kind: 'roleGet', role }, ctx)).perm;
  }

  async roleList(ctx: RequestContext): Promise<string[]> {
    return (await this.#propose({ kind: 'roleList' }, ctx)).roles;
  }

  async roleDelete(role: string, ctx: RequestContext): Promise<void> {
    await this.#propose({ kind: 'roleDelete', role }, ctx);
  }

  async roleGrantPermission(name: string, perm: Permission | undefined, ctx: RequestContext): Promise<void> {
    await this.#propose(perm === undefined ? { kind: 'roleGrantPermission', name } : { kind: 'roleGrantPermission', name, perm }, ctx);
  }

  async roleRevokePermission(role: string, key: Uint8Array, rangeEnd: Uint8Array, ctx: RequestContext): Promise<void> {
    await this.#propose({ kind: 'roleRevokePermission', role, key, rangeEnd }, ctx);
  }
}
