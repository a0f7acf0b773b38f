/**
 * The Join service's challenges, stateless so that no flood of Challenge calls can evict a real joiner's
 * (issue 20, item 5: ~300 calls pushed every pending challenge out of a table of 256). A challenge is
 *
 *   nonce = expiry (u64 BE, ms since epoch) | 16 random bytes | HMAC-SHA256(secret, expiry | random)[0..16]
 *
 * under a secret of this process, so the member recognises its own unexpired nonces without storing them.
 * A nonce may serve one Call only: the nonces of Calls whose MAC proved the join token are remembered until
 * they expire. Only a token holder can add to that set, so it stays small; past `usedMax` a call is refused
 * (the joiner retries), never an older entry forgotten, which would let a recorded Call be replayed.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const expiryBytes = 8;
const randomPartBytes = 16;
const tagBytes = 16;
export const challengeNonceBytes = expiryBytes + randomPartBytes + tagBytes;

export interface JoinChallengesOptions {
  ttlMs: number;
  /** Used nonces remembered at once (they are dropped when they expire). */
  usedMax: number;
  now?: () => number;
}

export class JoinChallenges {
  readonly #secret = randomBytes(32);
  readonly #used = new Map<string, number>(); // nonce hex → expiry
  readonly #ttlMs: number;
  readonly #usedMax: number;
  readonly #now: () => number;

  constructor(o: JoinChallengesOptions) {
    if (!(o.ttlMs > 0) || !(o.usedMax > 0)) throw new TypeError('JoinChallenges: ttlMs and usedMax must be positive');
    this.#ttlMs = o.ttlMs;
    this.#usedMax = o.usedMax;
    this.#now = o.now ?? Date.now;
  }

  issue(): Buffer {
    const head = Buffer.alloc(expiryBytes + randomPartBytes);
    head.writeBigUInt64BE(BigInt(this.#now() + this.#ttlMs), 0);
    randomBytes(randomPartBytes).copy(head, expiryBytes);
    return Buffer.concat([head, this.#tag(head)]);
  }

  /** A nonce this process issued and that has not expired (used or not). */
  issuedAndFresh(nonce: unknown): nonce is Uint8Array {
    if (!(nonce instanceof Uint8Array) || nonce.length !== challengeNonceBytes) return false;
    const bytes = Buffer.from(nonce.buffer, nonce.byteOffset, nonce.length);
    const head = bytes.subarray(0, expiryBytes + randomPartBytes);
    if (!timingSafeEqual(bytes.subarray(head.length), this.#tag(head))) return false;
    return Number(bytes.readBigUInt64BE(0)) >= this.#now();
  }

  /**
   * Marks a fresh nonce used, once the caller proved the token; false when it was used before, or when too
   * many are remembered to take another now.
   */
  consume(nonce: Uint8Array): boolean {
    const now = this.#now();
    for (const [key, expires] of this.#used) if (expires < now) this.#used.delete(key);
    const key = Buffer.from(nonce).toString('hex');
    if (this.#used.has(key) || this.#used.size >= this.#usedMax) return false;
    this.#used.set(key, Number(Buffer.from(nonce).readBigUInt64BE(0)));
    return true;
  }

  #tag(head: Buffer): Buffer {
    return createHmac('sha256', this.#secret).update(head).digest().subarray(0, tagBytes);
  }
}
