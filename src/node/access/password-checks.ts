/**
 * Password checks and hashes off the event loop, bounded, and fair to the sources of the calls.
 *
 * Issue 20, item 6: bcryptjs hashed on the main thread, and Authenticate needs no credentials, so a handful of
 * parallel wrong passwords held the loop past an election timeout on a Pi. bcrypt now runs on libuv's thread
 * pool (@node-rs/bcrypt), at most passwordChecksMax checks and passwordHashesMax hashes at once.
 *
 * Issue 31, items 3 and 4: the backoff that slowed guesses was keyed by the user, and a check inside it was
 * refused unchecked, so one client sending wrong root passwords locked root out (its right password failed
 * 5 of 5 times; with 1,000 attackers, every time), and once the tokens in use expired nobody could log in.
 * Now everything that slows guesses is keyed by the call's source (its client address, an IPv6 /64; see
 * RequestContext.source), and a check is never refused for naming the same user as someone else's guesses:
 *   - known-good (known-passwords.ts): a password bcrypt verified for a user, against the same stored hash,
 *     is answered at once, with no bcrypt and no queue;
 *   - each source has its own queue and runs one check at a time, so a thousand connections of one attacker
 *     hold one bcrypt slot, not the pool; its queue holds passwordChecksQueuedPerSourceMax;
 *   - past passwordFailuresFree failures in a row, a source's next check waits for its backoff (doubling per
 *     failure, passwordBackoffMsMin..Max) and is then checked; a bcrypt-verified right password clears it;
 *   - a free bcrypt slot goes first to sources with fewer than passwordFailuresFree failures, then to the
 *     others, each tier first come first served, so a clean client's check runs next whatever is queued;
 *   - a check that finds its source's queue (or its tier) full is refused unchecked with etcd's "too many
 *     requests", answered when the source's backoff ends (at least passwordBackoffMsMin on), up to
 *     passwordRefusalsHeldMax held; past that at once. Held, a caller that sends its next guess on each
 *     answer gets one answer per backoff (issue 20: answered at once, 50 such callers made thousands of calls
 *     a second and tripled a 3-member cluster's put p99).
 * Why "too many requests" and not "authentication failed" for a refusal: the password was not looked at, and
 * a client sharing an address with an attacker must not be told that its right password is wrong (an
 * operator would reset it); etcd's clients (clientv3, etcd3) retry neither, so they handle both alike.
 *
 * Why the known-good lookup happens only for admitted checks: done for every call, it would answer right
 * guesses as fast as calls arrive, an oracle far faster than bcrypt. Admitted checks arrive no faster than
 * the source's queue drains, one per backoff. The price: a client behind the same address as an attacker who
 * keeps that address's queue full is refused until the attack stops. Clients elsewhere are not touched.
 *
 * Worked example (free = 3, min = 250 ms): an attacker at 10.0.0.9 opens 1,000 calls guessing root. One
 * runs, 4 wait, 995 are held. After four failures (4 bcrypt runs, one at a time) 10.0.0.9 waits 250 ms, then
 * 500 ms, ... 8 s; each wait ends in one bcrypt run, and the held calls are answered "too many requests" as it
 * ends (those calls come back, and find the queue full again). Meanwhile root logs in from 10.0.0.1: a known password answers at once; a new one takes the next
 * free slot (its tier runs first) and is answered in at most two bcrypt times.
 */
import {
  passwordBackoffMsMax,
  passwordBackoffMsMin,
  passwordBackoffSourcesMax,
  passwordChecksMax,
  passwordChecksQueuedMax,
  passwordChecksQueuedPerSourceMax,
  passwordFailuresFree,
  passwordHashesMax,
  passwordHashesQueuedMax,
  passwordRefusalsHeldMax,
} from '../../base/limits.js';
import { EtcdError } from '../errors.js';
import { KnownPasswords } from './known-passwords.js';
import { RunSlots } from './run-slots.js';

/**
 * @node-rs/bcrypt on first use: a member that never checks or sets a password (auth off, the usual k3s
 * setup) never loads its native addon (issue 34: private memory at rest).
 */
let bcryptLoaded: Promise<typeof import('@node-rs/bcrypt')> | undefined;
const bcrypt = (): Promise<typeof import('@node-rs/bcrypt')> => (bcryptLoaded ??= import('@node-rs/bcrypt'));

/** The source of a call that names none (tests, the simulator): all such calls share one. */
export const unknownSource = 'unknown';

export interface PasswordChecksOptions {
  now?: () => number;
  /** The bcrypt comparison (tests count calls); default @node-rs/bcrypt on the thread pool. */
  verifyHash?: (password: string, hash: string) => Promise<boolean>;
  /** Waits `ms` (a backoff, a held refusal); default a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** The bcrypt hash (tests hold it); default @node-rs/bcrypt on the thread pool. */
  hashPassword?: (password: string, cost: number) => Promise<string>;
}

/** What the checks did, for the metrics and tests. */
export interface PasswordCounts {
  /** bcrypt comparisons run. */
  verified: number;
  /** bcrypt hashes computed. */
  hashed: number;
  /** Checks answered by a known-good password, without bcrypt. */
  known: number;
  /** Checks refused unchecked ("too many requests"). */
  refused: number;
}

interface Backoff {
  failures: number;
  untilMs: number;
}

/** Tier 0: sources with fewer than passwordFailuresFree failures; tier 1: the others. */
type Tier = 0 | 1;

interface Check {
  user: string;
  password: string;
  hash: string;
  tier: Tier;
  resolve(ok: boolean): void;
  reject(err: unknown): void;
}

/** A source with a check running or waiting (absent otherwise). */
interface SourceQueue {
  source: string;
  waiting: Check[];
  running: boolean;
  /** In a tier's ready list: its first check may run. */
  ready: boolean;
  /** A timer will look again when its backoff ends. */
  armed: boolean;
}

export class PasswordChecks {
  readonly #now: () => number;
  readonly #verifyHash: (password: string, hash: string) => Promise<boolean>;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #hashPassword: (password: string, cost: number) => Promise<string>;
  readonly #known = new KnownPasswords();
  readonly #backoffs = new Map<string, Backoff>();
  readonly #queues = new Map<string, SourceQueue>();
  readonly #readyByTier: [SourceQueue[], SourceQueue[]] = [[], []];
  readonly #queuedByTier: [number, number] = [0, 0];
  readonly #hashes = new RunSlots(passwordHashesMax, passwordHashesQueuedMax);
  readonly #counts: PasswordCounts = { verified: 0, hashed: 0, known: 0, refused: 0 };
  #running = 0;
  #held = 0;

  constructor(o: PasswordChecksOptions = {}) {
    this.#now = o.now ?? Date.now;
    this.#verifyHash = o.verifyHash ?? (async (password, hash) => (await bcrypt()).verify(password, hash));
    this.#sleep = o.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#hashPassword = o.hashPassword ?? (async (password, cost) => (await bcrypt()).hash(password, cost));
  }

  /**
   * Whether `password` matches `hash` for `user`, checked in `source`'s turn; rejects with "too many
   * requests" when that source (or its tier) already has a full queue.
   */
  verify(user: string, password: string, hash: string, source: string = unknownSource): Promise<boolean> {
    const queue = this.#queues.get(source);
    const tier = this.#tier(source);
    if ((queue?.waiting.length ?? 0) >= passwordChecksQueuedPerSourceMax || this.#queuedByTier[tier] >= passwordChecksQueuedMax) {
      return this.#refuse(source);
    }
    if (this.#known.matches(user, hash, password)) {
      this.#counts.known++;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve, reject) => {
      let q = queue;
      if (q === undefined) this.#queues.set(source, (q = { source, waiting: [], running: false, ready: false, armed: false }));
      q.waiting.push({ user, password, hash, tier, resolve, reject });
      this.#queuedByTier[tier]++;
      this.#schedule(q);
      this.#pump();
    });
  }

  /** A bcrypt hash of `password` at `cost`, under its own cap: an admin's hashing never takes a check's slot. */
  hash(password: string, cost: number): Promise<string> {
    return this.#hashes.run(() => {
      this.#counts.hashed++;
      return this.#hashPassword(password, cost);
    });
  }

  counts(): Readonly<PasswordCounts> {
    return this.#counts;
  }

  /** Makes `q`'s first check runnable now, or when its source's backoff ends. */
  #schedule(q: SourceQueue): void {
    if (q.running || q.ready || q.armed || q.waiting.length === 0) return;
    const waitMs = (this.#backoffs.get(q.source)?.untilMs ?? 0) - this.#now();
    if (waitMs > 0) {
      q.armed = true;
      void this.#sleep(waitMs).then(() => {
        q.armed = false;
        this.#schedule(q);
        this.#pump();
      });
      return;
    }
    q.ready = true;
    this.#readyByTier[this.#tier(q.source)].push(q);
  }

  /** Fills the free bcrypt slots, tier 0 first. */
  #pump(): void {
    while (this.#running < passwordChecksMax) {
      const q = this.#readyByTier[0].shift() ?? this.#readyByTier[1].shift();
      if (q === undefined) return;
      q.ready = false;
      const check = q.waiting.shift()!;
      this.#queuedByTier[check.tier]--;
      q.running = true;
      this.#running++;
      void this.#run(q, check);
    }
  }

  async #run(q: SourceQueue, c: Check): Promise<void> {
    try {
      c.resolve(await this.#check(q.source, c));
    } catch (err) {
      c.reject(err);
    } finally {
      this.#running--;
      q.running = false;
      if (q.waiting.length === 0) this.#queues.delete(q.source);
      else this.#schedule(q);
      this.#pump();
    }
  }

  async #check(source: string, c: Check): Promise<boolean> {
    // Asked again in its turn: a burst of logins with one password costs one bcrypt run.
    if (this.#known.matches(c.user, c.hash, c.password)) {
      this.#counts.known++;
      return true;
    }
    this.#counts.verified++;
    const ok = await this.#verifyHash(c.password, c.hash);
    if (!ok) {
      this.#fail(source);
      return false;
    }
    this.#known.remember(c.user, c.hash, c.password);
    // Only bcrypt's word clears a backoff: were a known password to, an attacker holding any account could
    // log in with it between guesses and never back off.
    this.#backoffs.delete(source);
    return true;
  }

  async #refuse(source: string): Promise<never> {
    this.#counts.refused++;
    const waitMs = Math.max(passwordBackoffMsMin, (this.#backoffs.get(source)?.untilMs ?? 0) - this.#now());
    if (this.#held < passwordRefusalsHeldMax) {
      this.#held++;
      try {
        await this.#sleep(waitMs);
      } finally {
        this.#held--;
      }
    }
    throw new EtcdError('tooManyRequests');
  }

  #tier(source: string): Tier {
    return (this.#backoffs.get(source)?.failures ?? 0) < passwordFailuresFree ? 0 : 1;
  }

  #fail(source: string): void {
    const failures = (this.#backoffs.get(source)?.failures ?? 0) + 1;
    const over = failures - passwordFailuresFree;
    const waitMs = over <= 0 ? 0 : Math.min(passwordBackoffMsMax, passwordBackoffMsMin * 2 ** Math.min(over - 1, 30));
    this.#backoffs.delete(source); // re-inserted last: the map's order is the forgetting order
    this.#backoffs.set(source, { failures, untilMs: this.#now() + waitMs });
    if (this.#backoffs.size > passwordBackoffSourcesMax) this.#backoffs.delete(this.#backoffs.keys().next().value!);
  }
}
