/**
 * The last password each user proved with bcrypt, kept as an HMAC-SHA256 under a key drawn at start and
 * never stored (issue 31, item 3): a client logging in again with the same password, against the same stored
 * hash, is answered in microseconds, with no bcrypt and no queue, so guesses at its user cannot slow it. The
 * stored hash is part of the MAC: a changed password (a new hash, a new salt) misses by itself, and so does a
 * user deleted and added again. Nothing here can be turned back into a password: the key lives only in this
 * process, and the MAC is compared in constant time.
 *
 * It is never a faster oracle for guesses: password-checks.ts asks it only for a check it has admitted to its
 * bounded queues, so guesses reach it no faster than they would reach bcrypt.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { passwordKnownGoodMax } from '../../base/limits.js';

export class KnownPasswords {
  readonly #key: Buffer;
  /** user → MAC of (user, hash, password); insertion order is recency (least recent first). */
  readonly #macs = new Map<string, Buffer>();

  constructor(key: Buffer = randomBytes(32)) {
    this.#key = key;
  }

  /** Whether `password` is the one last verified for `user` against this very `hash`. */
  matches(user: string, hash: string, password: string): boolean {
    const known = this.#macs.get(user);
    if (known === undefined) return false;
    if (!timingSafeEqual(known, this.#mac(user, hash, password))) return false;
    this.#macs.delete(user); // re-inserted last: recently used
    this.#macs.set(user, known);
    return true;
  }

  /** bcrypt said `password` matches `hash`. */
  remember(user: string, hash: string, password: string): void {
    this.#macs.delete(user);
    this.#macs.set(user, this.#mac(user, hash, password));
    if (this.#macs.size > passwordKnownGoodMax) this.#macs.delete(this.#macs.keys().next().value!);
  }

  get size(): number {
    return this.#macs.size;
  }

  #mac(user: string, hash: string, password: string): Buffer {
    // JSON keeps the three apart whatever they contain: ("a", "bc") and ("ab", "c") differ.
    return createHmac('sha256', this.#key).update(JSON.stringify([user, hash, password])).digest();
  }
}
