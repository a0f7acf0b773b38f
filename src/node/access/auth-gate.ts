/**
 * The request edge of auth (etcd's AuthInfoFromCtx and the checks of v3_server.go): who a call speaks for,
 * and the permission checks made before a request is served locally. Writes are judged again in apply
 * (src/node/apply/apply.ts) at the auth revision they carry; a local read is judged here and refused afterwards
 * if the auth state changed while it ran ("revision of auth store is old"), as etcd's doSerialize does.
 *
 * Credentials, in etcd's order: the `token` (or gateway `authorization`) metadata; else, with
 * --client-cert-auth, the common name of the verified client certificate. Without auth enabled nobody is
 * asked for anything and tokens are ignored (etcd 3.5).
 */
import { pendingProposalsMax } from '../../base/limits.js';
import type { Scheduler, TimerHandle } from '../../base/scheduler.js';
import { checkRange, checkTxn, type AuthStore } from '../../auth/index.js';
import { AuthError, type AuthInfo } from '../../auth/types.js';
import type { TxnRequest } from '../../mvcc/types.js';
import type { RequestContext } from '../api-types.js';
import { etcdErrors, untranslatedAuthError, type GrpcCodeName } from '../errors.js';
import type { TokenProvider } from './token-provider.js';

export interface AuthGateHost {
  auth(): AuthStore;
  leaseKeys(id: bigint): Iterable<Uint8Array>;
  applied(): number;
  commit(): number;
  waitApplied(index: number): Promise<void>;
  timeoutMs: number;
  /** The member's timers and clock (the simulator's event loop under test/sim). */
  scheduler: Scheduler;
}

export interface AuthGateOptions {
  tokens: TokenProvider;
  /** --client-cert-auth: a verified client certificate's common name is the user when no token is sent. */
  clientCertAuth: boolean;
}

const empty = new Uint8Array(0);

type MaybePromise<T> = T | Promise<T>;

export class AuthGate {
  readonly #host: AuthGateHost;
  readonly #o: AuthGateOptions;

  constructor(host: AuthGateHost, options: AuthGateOptions) {
    this.#host = host;
    this.#o = options;
  }

  get tokens(): TokenProvider {
    return this.#o.tokens;
  }

  /** Who the call speaks for; undefined when auth is off or no credentials came. Throws invalidAuthToken. */
  async info(ctx: RequestContext): Promise<AuthInfo | undefined> {
    if (!this.#host.auth().enabled) return undefined;
    const index = ctx.token === undefined ? undefined : this.#o.tokens.indexOf(ctx.token);
    // A simple token names the entry that created it: a member that has not applied it yet waits.
    if (index !== undefined && index > this.#host.applied()) await this.#waitApplied(index);
    return this.infoNow(ctx);
  }

  /** The same without waiting (watch creates): a simple token this member has not applied is not known yet. */
  infoNow(ctx: RequestContext): AuthInfo | undefined {
    const store = this.#host.auth();
    if (!store.enabled) return undefined;
    if (ctx.token !== undefined) {
      const ai = this.#o.tokens.info(ctx.token, store.revision);
      if (ai === undefined) throw new AuthError('invalidAuthToken');
      return ai;
    }
    return this.#certInfo(ctx, store);
  }

  #certInfo(ctx: RequestContext, store: AuthStore): AuthInfo | undefined {
    if (!this.#o.clientCertAuth || ctx.certCommonName === undefined || ctx.certCommonName === '') return undefined;
    return { username: ctx.certCommonName, revision: store.revision };
  }

  async #waitApplied(index: number): Promise<void> {
    // An index far past anything committed is not a token of this cluster; do not park a waiter for it.
    if (index > this.#host.commit() + pendingProposalsMax) throw new AuthError('invalidAuthToken');
    let timer: TimerHandle | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = this.#host.scheduler.after(this.#host.timeoutMs, () => reject(new AuthError('invalidAuthToken')));
    });
    try {
      await Promise.race([this.#host.waitApplied(index), timeout]);
    } finally {
      timer?.cancel();
    }
  }

  /** Root-only operations (member changes): etcd's IsAdminPermitted. */
  checkAdmin(ctx: RequestContext): MaybePromise<void> {
    if (!this.#host.auth().enabled) return;
    return this.info(ctx).then((ai) => this.#host.auth().checkAdmin(ai));
  }

  /** Root-only maintenance (Defragment, Snapshot, Hash, HashKV), refused with auth's untranslated errors as etcd 3.5. */
  async checkMaintenanceAdmin(ctx: RequestContext): Promise<void> {
    try {
      await this.checkAdmin(ctx);
    } catch (err) {
      throw err instanceof AuthError ? untranslatedAuthError(err) : err;
    }
  }

  /**
   * Judge a local read of [key, rangeEnd); returns what to pass to `afterRead`. Synchronous while auth is
   * off (the hot path pays no promise), as are the other checks.
   */
  checkRead(ctx: RequestContext, key: Uint8Array, rangeEnd: Uint8Array): MaybePromise<AuthInfo | undefined> {
    if (!this.#host.auth().enabled) return undefined;
    return this.#judged(ctx, (store, ai) => checkRange(store, ai, { key, rangeEnd }));
  }

  /** A read-only txn served locally: compares and every read, nested ones included. */
  checkLocalTxn(ctx: RequestContext, txn: TxnRequest): MaybePromise<AuthInfo | undefined> {
    if (!this.#host.auth().enabled) return undefined;
    return this.#judged(ctx, (store, ai) => checkTxn(store, ai, txn, (id) => this.#host.leaseKeys(id)));
  }

  /** Without credentials a read is judged as etcd's empty AuthInfo (revision 0: "user name is empty"). */
  async #judged(ctx: RequestContext, check: (store: AuthStore, ai: AuthInfo) => void): Promise<AuthInfo> {
    const ai = (await this.info(ctx)) ?? { username: '', revision: 0 };
    check(this.#host.auth(), ai);
    return ai;
  }

  /** etcd's doSerialize: the auth state must not have changed while a checked read ran. */
  afterRead(ai: AuthInfo | undefined): void {
    if (ai !== undefined && ai.revision !== 0 && ai.revision !== this.#host.auth().revision) throw new AuthError('authOldRevision');
  }

  /** etcd's checkLeaseTimeToLive: reading a lease needs read permission on each of its keys. */
  checkLeaseRead(ctx: RequestContext, leaseId: bigint): MaybePromise<void> {
    if (!this.#host.auth().enabled) return;
    return this.info(ctx).then((ai) => {
      if (ai === undefined) throw new AuthError('userEmpty');
      for (const key of this.#host.leaseKeys(leaseId)) this.#host.auth().checkRead(ai, key, empty);
    });
  }

  /** A watch create's refusal (etcd's isWatchPermitted), as the cancel reason etcd sends; undefined: allowed. */
  watchRefusal(ctx: RequestContext, key: Uint8Array, rangeEnd: Uint8Array): string | undefined {
    const store = this.#host.auth();
    if (!store.enabled) return undefined;
    try {
      checkRange(store, this.infoNow(ctx) ?? { username: '', revision: 0 }, { key, rangeEnd });
      return undefined;
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      return watchCancelReason(err);
    }
  }
}

/** gRPC's code names, as Go's status error text spells them. */
const statusNames: Partial<Record<GrpcCodeName, string>> = {
  UNAUTHENTICATED: 'Unauthenticated',
  INVALID_ARGUMENT: 'InvalidArgument',
  PERMISSION_DENIED: 'PermissionDenied',
};

/** etcd's recvLoop: the gRPC error text of the refusal (`rpc error: code = … desc = …`). */
function watchCancelReason(err: AuthError): string {
  const known = err.code === 'invalidAuthToken' || err.code === 'authOldRevision' || err.code === 'userEmpty';
  const row = etcdErrors[known ? err.code : 'permissionDenied'];
  return `rpc error: code = ${statusNames[row.status]!} desc = ${row.message}`;
}
