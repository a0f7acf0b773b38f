/**
 * What the member needs of auth, assembled once: the token provider chosen by --auth-token, the request
 * gate, the Auth service's core, and the two hooks into the request pipeline (stamping proposals with the
 * caller's auth info, refusing watches on ranges the caller may not read).
 */
import { authTokenTtlSecondsDefault, bcryptCostDefault } from '../../base/limits.js';
import type { AuthStore } from '../../auth/auth-store.js';
import { invalidWatchId } from '../../mvcc/watch-types.js';
import type { RequestContext, WatchSink, WatchStream } from '../api-types.js';
import type { RaftRequest } from '../driver/raft-request.js';
import { AuthApi, type AuthApiHost } from './auth-api.js';
import { AuthGate, type AuthGateHost } from './auth-gate.js';
import { createTokenProvider, type TokenProvider } from './token-provider.js';

export interface ServerAuthOptions {
  /** etcd's --auth-token: "simple" (default) or "jwt,pub-key=…,priv-key=…,sign-method=…[,ttl=…]". */
  authToken?: string;
  /** etcd's --auth-token-ttl (simple tokens), seconds; default 300. */
  authTokenTtlSeconds?: number;
  /** etcd's --bcrypt-cost; default 10. */
  bcryptCost?: number;
  /** etcd's --client-cert-auth: a verified certificate's common name is the user when no token is sent. */
  clientCertAuth?: boolean;
  /**
   * For the simulator only (test/sim/node), whose runs are functions of their seed: bcrypt's comparison runs on
   * libuv's thread pool and ends in real time, and a simple token's prefix is drawn from node:crypto. Production
   * leaves both unset.
   */
  deterministic?: { verifyHash(password: string, hash: string): Promise<boolean>; tokenPrefix(): string };
}

export type ServerAuthHost = AuthGateHost & Omit<AuthApiHost, 'gate' | 'bcryptCost' | 'passwords' | 'tokenPrefix'> & { revision(): number };

export interface ServerAuth {
  readonly gate: AuthGate;
  readonly api: AuthApi;
  /** The request with the caller's auth info, for apply to judge (etcd's RequestHeader). */
  stamp<R extends RaftRequest>(req: R, ctx: RequestContext): R | Promise<R>;
  /** A restored snapshot brought a new auth store: tell it about this member's tokens. */
  rebind(store: AuthStore): void;
  guardWatch(stream: WatchStream, sink: WatchSink, ctx: RequestContext): WatchStream;
}

export function createServerAuth(host: ServerAuthHost, options: ServerAuthOptions = {}): ServerAuth {
  // Time through the member's scheduler (real in production, the simulator's event loop there).
  const scheduler = host.scheduler;
  const tokens: TokenProvider = createTokenProvider(options.authToken ?? 'simple', {
    ttlSeconds: options.authTokenTtlSeconds ?? authTokenTtlSecondsDefault,
    clock: { nowMs: () => scheduler.nowMs() },
    wallClockMs: () => scheduler.wallMs(),
  });
  const gate = new AuthGate(host, { tokens, clientCertAuth: options.clientCertAuth === true });
  const d = options.deterministic;
  const api = new AuthApi({
    ...host,
    gate,
    bcryptCost: options.bcryptCost ?? bcryptCostDefault,
    passwords: { now: () => scheduler.nowMs(), ...(d !== undefined ? { verifyHash: (p: string, h: string) => d.verifyHash(p, h) } : {}) },
    ...(d !== undefined ? { tokenPrefix: () => d.tokenPrefix() } : {}),
  });
  host.auth().setHooks(tokens);
  return {
    gate,
    api,
    stamp: (req, ctx) => {
      if (!host.auth().enabled) return req;
      return gate.info(ctx).then((auth) => (auth === undefined ? req : { ...req, auth }));
    },
    rebind: (store) => store.setHooks(tokens),
    guardWatch: (stream, sink, ctx) => ({
      create: (req) => {
        const reason = gate.watchRefusal(ctx, req.key, req.rangeEnd);
        if (reason === undefined) return stream.create(req);
        sink.send({
          watchId: invalidWatchId, created: true, canceled: true, compactRevision: 0, cancelReason: reason,
          fragment: false, events: [], revision: host.revision(),
        });
      },
      cancel: (watchId) => stream.cancel(watchId),
      requestProgress: () => stream.requestProgress(),
      resume: () => stream.resume(),
      close: () => stream.close(),
    }),
  };
}
