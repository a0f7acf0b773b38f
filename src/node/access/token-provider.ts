/**
 * The token provider chosen by `--auth-token` (etcd's NewTokenProvider): "simple" (the default) or
 * "jwt,pub-key=<path>,priv-key=<path>,sign-method=<alg>[,ttl=<duration>]". Both answer the same questions:
 * who a token speaks for, and what token to hand out after an Authenticate entry applied.
 */
import type { Clock } from '../../base/clock.js';
import type { AuthHooks } from '../../auth/auth-store.js';
import type { AuthInfo } from '../../auth/types.js';
import { JwtTokens } from './jwt-tokens.js';
import { SimpleTokens } from './simple-tokens.js';
import { parseDurationMs } from '../../config/duration.js';

/** etcd's default JWT ttl (5 minutes). */
const jwtTtlMsDefault = 5 * 60 * 1000;

export interface TokenProvider extends AuthHooks {
  readonly kind: 'simple' | 'jwt';
  /** The raft index a member must have applied before it can know this token (simple tokens). */
  indexOf(token: string): number | undefined;
  /** `revision`: the store's current auth revision (what a simple token is judged at). */
  info(token: string, revision: number): AuthInfo | undefined;
  issue(name: string, simpleTokenPrefix: string, index: number, revision: number): string;
}

export function createTokenProvider(spec: string, options: { ttlSeconds: number; clock: Clock; wallClockMs: () => number }): TokenProvider {
  const [kind = '', ...rest] = spec.split(',');
  const opts = new Map<string, string>();
  for (const pair of rest) {
    const parts = pair.split('=');
    if (parts.length !== 2) throw new Error(`auth-token: invalid token option ${JSON.stringify(pair)} in ${JSON.stringify(spec)}`);
    opts.set(parts[0]!, parts[1]!);
  }
  if (kind === 'simple') {
    if (opts.size > 0) throw new Error(`auth-token: simple takes no options (${JSON.stringify(spec)})`);
    return simpleProvider(new SimpleTokens({ ttlMs: options.ttlSeconds * 1000, clock: options.clock }));
  }
  if (kind === 'jwt') {
    for (const k of opts.keys()) {
      if (!['pub-key', 'priv-key', 'sign-method', 'ttl'].includes(k)) throw new Error(`auth-token: unknown jwt option ${JSON.stringify(k)}`);
    }
    const signMethod = opts.get('sign-method');
    if (signMethod === undefined) throw new Error('auth-token: jwt needs sign-method');
    const ttl = opts.get('ttl');
    const jwt = new JwtTokens({
      signMethod,
      ...(opts.has('priv-key') ? { privKeyFile: opts.get('priv-key')! } : {}),
      ...(opts.has('pub-key') ? { pubKeyFile: opts.get('pub-key')! } : {}),
      ttlMs: ttl === undefined ? jwtTtlMsDefault : ttlMsOf(ttl),
    });
    return jwtProvider(jwt, options.wallClockMs);
  }
  throw new Error(`auth-token: unknown token type ${JSON.stringify(kind)} (want simple or jwt,...)`);
}

function simpleProvider(tokens: SimpleTokens): TokenProvider {
  return {
    kind: 'simple',
    enabledChanged: (on) => tokens.enabledChanged(on),
    userInvalidated: (name) => tokens.userInvalidated(name),
    authenticated: (name, prefix, index) => tokens.authenticated(name, prefix, index),
    indexOf: (token) => SimpleTokens.indexOf(token),
    info: (token, revision) => {
      const username = tokens.user(token);
      return username === undefined ? undefined : { username, revision };
    },
    issue: (_name, prefix, index) => SimpleTokens.token(prefix, index),
  };
}

/** JWTs carry their own expiry (wall time, as the claim is read by any member) and revision. */
function jwtProvider(jwt: JwtTokens, wallClockMs: () => number): TokenProvider {
  return {
    kind: 'jwt',
    enabledChanged: () => {},
    userInvalidated: () => {},
    authenticated: () => {},
    indexOf: () => undefined,
    info: (token) => jwt.info(token, wallClockMs()),
    issue: (name, _prefix, _index, revision) => jwt.sign(name, revision, wallClockMs()),
  };
}

/** The JWT `ttl=` option: a positive Go duration ("5m", "90s", "1h30m", "1.5h"). */
function ttlMsOf(text: string): number {
  const ms = parseDurationMs(text);
  if (ms === undefined || ms <= 0) throw new Error(`auth-token: invalid duration ${JSON.stringify(text)}`);
  return ms;
}
