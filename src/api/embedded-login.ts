/**
 * The login of an embedded client under auth, as etcd's clientv3 keeps one (Config.Username/Password): the
 * client authenticates on its first call, sends the token with every call, and logs in again when a call is
 * refused for a stale token, then retries that call once. clientv3 refreshes its token on exactly these
 * refusals (shouldRefreshToken): `user name is empty` (auth was enabled after the client logged in, or its
 * login found auth off), `invalid auth token` (expired after --auth-token-ttl, forgotten on restart or when
 * auth was disabled), `revision of auth store is old` (the auth state changed between check and apply).
 *
 * A login that finds auth disabled is no error (clientv3 dials on): calls go without a token until a
 * refusal asks for one. A wrong password is: it reaches the caller with etcd's message.
 */
import { AuthError } from '../auth/types.js';
import { MvccError } from '../mvcc/types.js';
import { EtcdError, fromAuthError, fromMvccError, type EtcdErrorCode } from '../node/errors.js';
import type { EtcdApi, RequestContext } from '../node/server-api.js';
import { localSource } from './grpc/peer-source.js';

export interface Credentials {
  readonly name: string;
  readonly password: string;
}

/** The refusals after which clientv3 logs in again and retries the call. */
const staleTokenErrors: ReadonlySet<EtcdErrorCode> = new Set(['userEmpty', 'invalidAuthToken', 'authOldRevision']);

/** What a refused create's `cancelReason` says for the same refusals (auth-gate.ts's watchCancelReason). */
export function staleTokenCancelReason(reason: string): boolean {
  for (const code of staleTokenErrors) if (reason.endsWith(`desc = ${new EtcdError(code).message}`)) return true;
  return false;
}

/** The embedder sees the error a gRPC client would: etcd's message, never an internal code. */
export function clientError(err: unknown): unknown {
  if (err instanceof AuthError) return fromAuthError(err);
  if (err instanceof MvccError) return fromMvccError(err);
  return err;
}

export function checkCredentials(c: unknown): Credentials {
  if (typeof c !== 'object' || c === null) throw new TypeError('EmbeddedClient: user must be { name, password }');
  const { name, password, ...rest } = c as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new TypeError(`EmbeddedClient: unknown user option ${unknown[0]!}`);
  if (typeof name !== 'string' || name === '') throw new TypeError('EmbeddedClient: user.name must be a non-empty string');
  if (typeof password !== 'string') throw new TypeError('EmbeddedClient: user.password must be a string');
  return { name, password };
}

export class Login {
  readonly #api: EtcdApi;
  readonly #credentials: Credentials;
  /** The token calls carry; undefined before the first login and while auth is off. */
  #token: string | undefined;
  #loggedIn = false;
  /** The login under way: concurrent calls refused for the same stale token share it. */
  #pending: Promise<string | undefined> | undefined;

  constructor(api: EtcdApi, credentials: Credentials) {
    this.#api = api;
    this.#credentials = credentials;
  }

  /** The token as it stands, without logging in (a watch's first create). */
  get current(): string | undefined {
    return this.#token;
  }

  /** The token for the next call, logging in first if this login never has. */
  async token(): Promise<string | undefined> {
    if (this.#loggedIn) return this.#token;
    return this.renew(undefined);
  }

  /** Whether `err` asks for a new token (and the call a retry). */
  isStale(err: unknown): boolean {
    return err instanceof EtcdError && staleTokenErrors.has(err.code);
  }

  /** A new token, unless another call already replaced `stale`. */
  renew(stale: string | undefined): Promise<string | undefined> {
    if (this.#loggedIn && this.#token !== stale) return Promise.resolve(this.#token);
    this.#pending ??= this.#login().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #login(): Promise<string | undefined> {
    const authApi = this.#api.authApi;
    if (authApi === undefined) throw new TypeError('EmbeddedClient: this member has no auth');
    const { name, password } = this.#credentials;
    try {
      this.#token = await authApi.authenticate(name, password, { requireLeader: false, signal: new AbortController().signal, source: localSource });
    } catch (err) {
      const e = clientError(err);
      if (!(e instanceof EtcdError && e.code === 'authNotEnabled')) throw e;
      this.#token = undefined;
    }
    this.#loggedIn = true;
    return this.#token;
  }
}
