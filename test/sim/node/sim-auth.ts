/**
 * Auth in the production-node simulator (issue 25): users and roles set up through the Auth API, clients that
 * authenticate and send their token with every call (and authenticate again after "invalid auth token", as
 * etcd's clientv3 does), and intruders whose calls must fail with etcd's own errors. Every auth error any
 * client saw is judged at the end against etcd's api/v3rpc/rpctypes/error.go (code and message, written out
 * here, not taken from our table).
 *
 * - alice (readwrite on every key) runs the workload's clients, watchers, lease keeper and Lock/Election
 *   clients: the only auth error she may see is "invalid auth token" (her token expired on that member, or
 *   the member has not applied her Authenticate yet when a watch is created: simple tokens are per member);
 * - mallory (read on [a, e)) writes to the workload's keys: "permission denied", and the write never
 *   appears in the key space;
 * - a wrong password: "authentication failed"; a forged token: "invalid auth token"; no token: "user name
 *   is empty"; a token left unused for longer than its TTL on the member that issued it (same incarnation,
 *   so not re-created by a replay of the log): "invalid auth token".
 *
 * Deterministic: bcrypt's comparison runs synchronously (libuv's pool would finish in real time), hashes are
 * made with a fixed salt, token prefixes come from the seed, and the server's token clock is the simulator's
 * (ServerAuthOptions.deterministic, and the scheduler in createServerAuth).
 */
import { hashSync, verifySync } from '@node-rs/bcrypt';
import { utf8 } from '../../../src/base/bytes.js';
import { Prng } from '../../../src/base/prng.js';
import { PermType } from '../../../src/auth/types.js';
import type { ServerAuthOptions } from '../../../src/node/access/server-auth.js';
import { etcdStatusOf } from '../../../src/node/errors.js';
import type { RequestContext } from '../../../src/node/server-api.js';
import type { ServerCluster } from './server-cluster.js';
import type { ServerNode } from './server-node.js';

/** Short, so tokens expire inside a seed's chaos phase (etcd's default is 300 s). */
export const authTokenTtlSeconds = 5;
const bcryptCost = 4;
const salt = new Uint8Array(16).fill(0x5a);
const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

export const passwords = { root: 'root-pw', alice: 'alice-pw', mallory: 'mallory-pw' } as const;
export type SimUser = keyof typeof passwords;
const hashes = new Map<string, string>();
function hashOf(user: SimUser): string {
  let h = hashes.get(user);
  if (h === undefined) hashes.set(user, (h = hashSync(passwords[user], bcryptCost, salt)));
  return h;
}

/** A member's auth options in auth seeds: `rng` draws its simple tokens' prefixes. */
export function simAuthOptions(rng: Prng): ServerAuthOptions {
  return {
    authTokenTtlSeconds,
    bcryptCost,
    deterministic: {
      verifyHash: (password, hash) => Promise.resolve(verifySync(password, hash)),
      tokenPrefix: () => Array.from({ length: 16 }, () => letters[rng.int(letters.length)]).join(''),
    },
  };
}

/** etcd's errors for auth (api/v3rpc/rpctypes/error.go), as a client sees them. */
export const etcdAuthErrors = {
  invalidAuthToken: { status: 'UNAUTHENTICATED', message: 'etcdserver: invalid auth token' },
  authFailed: { status: 'INVALID_ARGUMENT', message: 'etcdserver: authentication failed, invalid user ID or password' },
  permissionDenied: { status: 'PERMISSION_DENIED', message: 'etcdserver: permission denied' },
  userEmpty: { status: 'INVALID_ARGUMENT', message: 'etcdserver: user name is empty' },
} as const;
type Expected = keyof typeof etcdAuthErrors;

/** Messages that are auth's (any row of etcd's table an auth check can answer with). */
const authMessages = new Set<string>([
  ...Object.values(etcdAuthErrors).map((e) => e.message),
  'etcdserver: revision of auth store is old',
  'etcdserver: user name not found',
  'etcdserver: authentication is not enabled',
  'etcdserver: root user does not exist',
  'etcdserver: invalid auth management',
]);

/** `source`: password guesses slow their own source down (password-checks.ts); the intruders have their own. */
function ctxOf(token: string | undefined, source = 'alice-host'): RequestContext {
  return { requireLeader: false, signal: new AbortController().signal, source, ...(token !== undefined ? { token } : {}) };
}
const intruderHost = 'intruder-host';

/** A call with a deadline (a member that crashes never answers). */
async function within<T>(c: ServerCluster, call: Promise<T>, ms: number): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  const timeout = c.loop.sleep(ms).then(() => ({ ok: false as const, error: new Error('client deadline exceeded') }));
  return Promise.race([call.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error })), timeout]);
}

export class SimAuth {
  readonly #c: ServerCluster;
  readonly #rng: Prng;
  /** alice's token per client (undefined: authenticate before the next call). */
  readonly #tokens = new Map<number, { token: string; node: ServerNode }>();
  readonly violations: string[] = [];
  /** Auth errors seen, by kind of client and error (for the totals line). */
  readonly seen = new Map<string, number>();
  /** Values mallory tried to write: none may ever be in the key space. */
  readonly refusedValues = new Set<string>();
  #stopped = false;
  #intruder: Promise<void> | undefined;

  constructor(c: ServerCluster, seed: number) {
    this.#c = c;
    this.#rng = new Prng(seed ^ 0xa07_4e);
  }

  /** Users, roles and permissions, then auth on: through the leader, retried until done. */
  async setup(): Promise<void> {
    const steps: [string, (n: ServerNode) => Promise<unknown>][] = [
      ['user add root', (n) => n.server!.authApi.userAdd({ name: 'root', password: '', hashedPassword: hashOf('root'), noPassword: false }, ctxOf(undefined))],
      ['grant root', (n) => n.server!.authApi.userGrantRole('root', 'root', ctxOf(undefined))],
      ['user add alice', (n) => n.server!.authApi.userAdd({ name: 'alice', password: '', hashedPassword: hashOf('alice'), noPassword: false }, ctxOf(undefined))],
      ['role add rw', (n) => n.server!.authApi.roleAdd('rw', ctxOf(undefined))],
      ['grant rw', (n) => n.server!.authApi.roleGrantPermission('rw', { permType: PermType.ReadWrite, key: utf8('\0'), rangeEnd: utf8('\0') }, ctxOf(undefined))],
      ['grant alice', (n) => n.server!.authApi.userGrantRole('alice', 'rw', ctxOf(undefined))],
      ['user add mallory', (n) => n.server!.authApi.userAdd({ name: 'mallory', password: '', hashedPassword: hashOf('mallory'), noPassword: false }, ctxOf(undefined))],
      ['role add ro', (n) => n.server!.authApi.roleAdd('ro', ctxOf(undefined))],
      ['grant ro', (n) => n.server!.authApi.roleGrantPermission('ro', { permType: PermType.Read, key: utf8('a'), rangeEnd: utf8('e') }, ctxOf(undefined))],
      ['grant mallory', (n) => n.server!.authApi.userGrantRole('mallory', 'ro', ctxOf(undefined))],
      ['auth enable', (n) => n.server!.authApi.authEnable(ctxOf(undefined))],
    ];
    for (const [what, step] of steps) {
      for (;;) {
        const leader = this.#c.leader();
        const r = leader === undefined ? undefined : await within(this.#c, step(leader), 3000);
        // A step whose answer was lost may have been applied: "already exists" means done.
        if (r !== undefined && (r.ok || /already exists|already granted/.test(String(r.error)))) break;
        await this.#c.loop.sleep(100);
      }
      this.#c.trace(`auth setup: ${what}`);
    }
  }

  /** alice's context for a call by `client` on `node`: authenticates there first when it holds no token. */
  async ctx(client: number, node: ServerNode): Promise<RequestContext | { error: unknown }> {
    const held = this.#tokens.get(client);
    if (held !== undefined) return ctxOf(held.token);
    const server = node.server;
    if (server === undefined) return { error: new Error('member down') };
    const r = await within(this.#c, server.authApi.authenticate('alice', passwords.alice, ctxOf(undefined)), 5000);
    if (!r.ok) return { error: r.error };
    this.#tokens.set(client, { token: r.value, node });
    return ctxOf(r.value);
  }

  /** `client` authenticates again before its next call. */
  forget(client: number): void {
    this.#tokens.delete(client);
  }

  /** An error alice's client got: any auth error but an invalid (expired, not yet known) token is wrong. */
  observe(who: 'alice', error: unknown): void {
    const s = etcdStatusOf(error);
    if (!authMessages.has(s.message)) return;
    this.#count(`${who}: ${s.message}`);
    const e = etcdAuthErrors.invalidAuthToken;
    if (s.status !== e.status || s.message !== e.message) this.violations.push(`auth: alice (readwrite on every key) got ${s.status} "${s.message}"`);
  }

  /** alice's client got an error: an invalid token is dropped, so its next call authenticates again. */
  failed(client: number, error: unknown): void {
    this.observe('alice', error);
    if (etcdStatusOf(error).message === etcdAuthErrors.invalidAuthToken.message) this.#tokens.delete(client);
  }

  #count(key: string): void {
    this.seen.set(key, (this.seen.get(key) ?? 0) + 1);
  }

  /** Judges an intruder's call: it must fail with exactly `expected` (or with no auth error at all: no leader, a timeout). */
  #judge(what: string, expected: Expected, r: { ok: boolean; error?: unknown }, mayPass = false): void {
    if (r.ok) {
      if (!mayPass) this.violations.push(`auth: ${what} succeeded; etcd answers "${etcdAuthErrors[expected].message}"`);
      return;
    }
    const s = etcdStatusOf(r.error);
    if (!authMessages.has(s.message)) return;
    this.#count(`${what}: ${s.message}`);
    const e = etcdAuthErrors[expected];
    if (s.status !== e.status || s.message !== e.message) this.violations.push(`auth: ${what} got ${s.status} "${s.message}", etcd answers ${e.status} "${e.message}"`);
  }

  /** The intruders: one call every 100–400 ms, of a kind chosen by the seed. */
  startIntruders(pick: () => ServerNode | undefined): void {
    this.#intruder = (async () => {
      let n = 0;
      while (!this.#stopped) {
        await this.#c.loop.sleep(100 + this.#rng.int(300));
        const node = pick();
        if (node?.server === undefined) continue;
        await this.#intrude(node, this.#rng.int(5), ++n);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#intruder;
  }

  async #intrude(node: ServerNode, kind: number, n: number): Promise<void> {
    const server = node.server!;
    const c = this.#c;
    const put = (token: string | undefined, key: string, value: string): Promise<unknown> =>
      server.put({ key: utf8(key), value: utf8(value), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, ctxOf(token));
    if (kind === 0) {
      this.#judge('a wrong password', 'authFailed', await within(c, server.authApi.authenticate('mallory', 'not-her-password', ctxOf(undefined, intruderHost)), 5000));
    } else if (kind === 1) {
      const forged = `${Array.from({ length: 16 }, () => letters[this.#rng.int(letters.length)]).join('')}.${1 + this.#rng.int(50)}`;
      this.#judge('a forged token', 'invalidAuthToken', await within(c, put(forged, 'a', `forged-${n}`), 5000));
      this.refusedValues.add(`forged-${n}`);
    } else if (kind === 2) {
      this.#judge('a call without a token', 'userEmpty', await within(c, put(undefined, 'b', `anonymous-${n}`), 5000));
      this.refusedValues.add(`anonymous-${n}`);
    } else if (kind === 3) {
      const auth = await within(c, server.authApi.authenticate('mallory', passwords.mallory, ctxOf(undefined, intruderHost)), 5000);
      // Her right password may be refused ("too many requests") while her wrong ones back her host off.
      if (!auth.ok) return this.#judge('mallory authenticating', 'authFailed', auth, true);
      const value = `mallory-${n}`;
      this.refusedValues.add(value);
      const s = node.server;
      if (s === undefined) return;
      this.#judge("mallory's write (read-only role)", 'permissionDenied', await within(c, s.put({ key: utf8('c'), value: utf8(value), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, ctxOf(auth.value)), 5000));
    } else {
      await this.#expired(node);
    }
  }

  /** A token left unused past its TTL on the member that issued it must be refused there. */
  async #expired(node: ServerNode): Promise<void> {
    const c = this.#c;
    const auth = await within(c, node.server!.authApi.authenticate('alice', passwords.alice, ctxOf(undefined)), 5000);
    if (!auth.ok) return;
    const incarnation = node.incarnation;
    await c.loop.sleep(authTokenTtlSeconds * 1000 + 500);
    const server = node.server;
    if (server === undefined || node.incarnation !== incarnation) return;
    const r = await within(c, server.range({
      key: utf8('a'), rangeEnd: new Uint8Array(0), limit: 0, revision: 0, sortOrder: 0, sortTarget: 0, serializable: true, keysOnly: false,
      countOnly: false, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0,
    }, ctxOf(auth.value)), 5000);
    this.#judge(`a token unused for ${authTokenTtlSeconds + 0.5} s`, 'invalidAuthToken', r);
  }
}
