/**
 * etcd's simple token provider (server/auth/simple_token.go): opaque tokens "<16 random letters>.<raft index
 * of the Authenticate entry>". The random prefix is drawn at the request edge and proposed; every member
 * learns the token when it applies the entry, so any member accepts it. A token lives `ttlMs` after its last
 * use (etcd: --auth-token-ttl, 300 s); tokens are dropped when auth is disabled, and a user's when it is
 * deleted or its password changes. Kept in memory only: a restarted member forgets them, as etcd does.
 */
import { randomInt } from 'node:crypto';
import { assert } from '../../base/assert.js';
import type { Clock } from '../../base/clock.js';
import { simpleTokensMax } from '../../base/limits.js';
import type { AuthHooks } from '../../auth/auth-store.js';

const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** etcd's defaultSimpleTokenLength. */
const prefixLength = 16;

interface Entry {
  user: string;
  lastUsedMs: number;
}

export class SimpleTokens implements AuthHooks {
  readonly #ttlMs: number;
  readonly #clock: Clock;
  /** Insertion order is use order: a use moves the token to the end, so the oldest is first. */
  readonly #tokens = new Map<string, Entry>();
  #enabled = false;

  constructor(options: { ttlMs: number; clock: Clock }) {
    assert(options.ttlMs > 0, 'simple token TTL must be positive');
    this.#ttlMs = options.ttlMs;
    this.#clock = options.clock;
  }

  static genPrefix(): string {
    let s = '';
    for (let i = 0; i < prefixLength; i++) s += letters[randomInt(letters.length)];
    return s;
  }

  static token(prefix: string, index: number): string {
    return `${prefix}.${index}`;
  }

  /** The raft index a token names (the member must have applied it to know the token), or undefined. */
  static indexOf(token: string): number | undefined {
    const parts = token.split('.');
    if (parts.length !== 2 || !/^\d+$/.test(parts[1]!)) return undefined;
    const index = Number(parts[1]);
    return Number.isSafeInteger(index) ? index : undefined;
  }

  enabledChanged(enabled: boolean): void {
    this.#enabled = enabled;
    if (!enabled) this.#tokens.clear();
  }

  userInvalidated(name: string): void {
    for (const [token, e] of this.#tokens) if (e.user === name) this.#tokens.delete(token);
  }

  authenticated(name: string, simpleTokenPrefix: string, index: number): void {
    if (!this.#enabled) return;
    this.#expire();
    // Bounded: past the cap the least recently used token goes first.
    if (this.#tokens.size >= simpleTokensMax) this.#tokens.delete(this.#tokens.keys().next().value!);
    this.#tokens.set(SimpleTokens.token(simpleTokenPrefix, index), { user: name, lastUsedMs: this.#clock.nowMs() });
  }

  /** The user a live token names; a use restarts its TTL (etcd's resetSimpleToken). */
  user(token: string): string | undefined {
    this.#expire();
    const e = this.#tokens.get(token);
    if (e === undefined) return undefined;
    this.#tokens.delete(token);
    e.lastUsedMs = this.#clock.nowMs();
    this.#tokens.set(token, e);
    return e.user;
  }

  get size(): number {
    return this.#tokens.size;
  }

  /** Drop tokens unused for the TTL: they are in use order, so the scan stops at the first live one. */
  #expire(): void {
    const now = this.#clock.nowMs();
    for (const [token, e] of this.#tokens) {
      if (now - e.lastUsedMs < this.#ttlMs) return;
      this.#tokens.delete(token);
    }
  }
}
