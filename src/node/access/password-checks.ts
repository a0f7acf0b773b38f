/**
 * Password checks and hashes off the event loop, bounded (issue 20, item 6). bcryptjs hashed on the main
 * thread in slices of up to ~100 ms, and Authenticate needs no credentials, so a handful of parallel wrong
 * passwords held the loop past an election timeout on a Pi. Now:
 *   - bcrypt runs on libuv's thread pool (@node-rs/bcrypt); the loop keeps ticking, heartbeating and serving;
 *   - at most passwordChecksMax run at once, passwordChecksQueuedMax wait, more are "too many requests";
 *   - past passwordFailuresFree wrong passwords in a row, the user's checks fail without bcrypt for a backoff
 *     that doubles per failure (passwordBackoffMsMin..Max); the right password clears it. The backoff is
 *     checked again when a queued check gets its turn, so a burst of guesses costs a few bcrypt runs, not
 *     one per guess;
 *   - a check refused inside the backoff is answered when the backoff ends (up to passwordRefusalsHeldMax
 *     held), not at once: answered at once, 50 callers that each send the next guess on the answer made
 *     thousands of calls a second, free of bcrypt but not of gRPC and ReadIndex work, and tripled the put
 *     p99 of a 3-member cluster (test/e2e/auth-flood.test.ts). Held, they get one answer per backoff.
 */
import { hash as bcryptHash, verify as bcryptVerify } from '@node-rs/bcrypt';
import {
  passwordBackoffMsMax,
  passwordBackoffMsMin,
  passwordBackoffUsersMax,
  passwordChecksMax,
  passwordChecksQueuedMax,
  passwordFailuresFree,
  passwordRefusalsHeldMax,
} from '../../base/limits.js';
import { EtcdError } from '../errors.js';

export interface PasswordChecksOptions {
  now?: () => number;
  /** The bcrypt comparison (tests count calls); default @node-rs/bcrypt on the thread pool. */
  verifyHash?: (password: string, hash: string) => Promise<boolean>;
  /** Waits `ms` (a refusal held until its backoff ends); default a timer. */
  sleep?: (ms: number) => Promise<void>;
}

interface Backoff {
  failures: number;
  untilMs: number;
}

export class PasswordChecks {
  readonly #now: () => number;
  readonly #verifyHash: (password: string, hash: string) => Promise<boolean>;
  readonly #backoffs = new Map<string, Backoff>();
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #waiting: Array<() => void> = [];
  #running = 0;
  #held = 0;

  constructor(o: PasswordChecksOptions = {}) {
    this.#now = o.now ?? Date.now;
    this.#verifyHash = o.verifyHash ?? ((password, hash) => bcryptVerify(password, hash));
    this.#sleep = o.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** Whether `password` matches `hash` for `user`; inside the user's backoff, false when it ends, unchecked. */
  async verify(user: string, password: string, hash: string): Promise<boolean> {
    if (this.#backingOff(user)) return this.#refuseAtBackoffEnd(user);
    await this.#turn();
    try {
      if (!this.#backingOff(user)) {
        const ok = await this.#verifyHash(password, hash);
        if (ok) this.#backoffs.delete(user);
        else this.#fail(user);
        return ok;
      }
    } finally {
      this.#release();
    }
    return this.#refuseAtBackoffEnd(user);
  }

  async #refuseAtBackoffEnd(user: string): Promise<false> {
    const waitMs = (this.#backoffs.get(user)?.untilMs ?? 0) - this.#now();
    if (waitMs <= 0 || this.#held >= passwordRefusalsHeldMax) return false;
    this.#held++;
    try {
      await this.#sleep(waitMs);
    } finally {
      this.#held--;
    }
    return false;
  }

  /** A bcrypt hash of `password` at `cost`, under the same cap as checks. */
  async hash(password: string, cost: number): Promise<string> {
    await this.#turn();
    try {
      return await bcryptHash(password, cost);
    } finally {
      this.#release();
    }
  }

  #backingOff(user: string): boolean {
    const b = this.#backoffs.get(user);
    return b !== undefined && this.#now() < b.untilMs;
  }

  #fail(user: string): void {
    const failures = (this.#backoffs.get(user)?.failures ?? 0) + 1;
    const over = failures - passwordFailuresFree;
    const waitMs = over <= 0 ? 0 : Math.min(passwordBackoffMsMax, passwordBackoffMsMin * 2 ** Math.min(over - 1, 30));
    this.#backoffs.delete(user); // re-inserted last: the map's order is the forgetting order
    this.#backoffs.set(user, { failures, untilMs: this.#now() + waitMs });
    if (this.#backoffs.size > passwordBackoffUsersMax) this.#backoffs.delete(this.#backoffs.keys().next().value!);
  }

  async #turn(): Promise<void> {
    if (this.#running < passwordChecksMax) {
      this.#running++;
      return;
    }
    if (this.#waiting.length >= passwordChecksQueuedMax) throw new EtcdError('tooManyRequests');
    // #release hands its slot over directly: #running stays counted.
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next !== undefined) next();
    else this.#running--;
  }
}
