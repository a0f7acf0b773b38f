/**
 * Password checks: bounded, off the event loop (issue 20, item 6), and slowed per source, never per user
 * (issue 31, item 3). Time and bcrypt are the test's: a manual clock whose timers fire on `advance`, and a
 * fake bcrypt whose comparisons end when the test says.
 */
import { describe, expect, it } from 'vitest';
import { hashSync } from '@node-rs/bcrypt';
import {
  passwordBackoffMsMin,
  passwordChecksMax,
  passwordChecksQueuedMax,
  passwordChecksQueuedPerSourceMax,
  passwordFailuresFree,
  passwordHashesMax,
  passwordHashesQueuedMax,
  passwordRefusalsHeldMax,
} from '../../../src/base/limits.js';
import { PasswordChecks } from '../../../src/node/access/password-checks.js';

const tooMany = 'etcdserver: too many requests';

/** Lets every promise reaction already due run (a macrotask turn; no time passes on the manual clock). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A clock whose timers fire only when the test advances it. */
function manualTime() {
  let nowMs = 0;
  const timers: Array<{ atMs: number; fire: () => void }> = [];
  return {
    now: () => nowMs,
    sleep: (ms: number) => new Promise<void>((fire) => timers.push({ atMs: nowMs + ms, fire })),
    timers,
    async advance(ms: number): Promise<void> {
      nowMs += ms;
      for (const t of timers.filter((x) => x.atMs <= nowMs)) {
        timers.splice(timers.indexOf(t), 1);
        t.fire();
      }
      await settle();
    },
  };
}

/** A fake bcrypt: each comparison waits for `finish`; `right` is the password every hash is of. */
function heldBcrypt(right = 'right') {
  const pending: Array<{ password: string; end: () => void }> = [];
  const f = {
    calls: [] as string[],
    pending,
    verifyHash: (password: string): Promise<boolean> => {
      f.calls.push(password);
      return new Promise((resolve) => pending.push({ password, end: () => resolve(password === right) }));
    },
    /** Ends the oldest running comparison. */
    async finish(): Promise<void> {
      pending.shift()!.end();
      await settle();
    },
    async finishAll(): Promise<void> {
      while (pending.length > 0) await f.finish();
    },
  };
  return f;
}

function setup() {
  const time = manualTime();
  const bcrypt = heldBcrypt();
  const checks = new PasswordChecks({ now: time.now, sleep: time.sleep, verifyHash: bcrypt.verifyHash });
  return { time, bcrypt, checks };
}

/** Puts `source` in its first backoff: the free failures and one more, one at a time. */
async function backOff(s: ReturnType<typeof setup>, source: string): Promise<void> {
  for (let i = 0; i <= passwordFailuresFree; i++) {
    const r = s.checks.verify('root', `wrong-${i}`, 'h', source);
    await settle();
    await s.bcrypt.finish();
    expect(await r).toBe(false);
  }
}

/** Settled state of a promise, without waiting for it. */
function track<T>(p: Promise<T>): { state: 'pending' | 'fulfilled' | 'rejected'; value?: T; error?: unknown } {
  const t: { state: 'pending' | 'fulfilled' | 'rejected'; value?: T; error?: unknown } = { state: 'pending' };
  p.then((value) => Object.assign(t, { state: 'fulfilled', value }), (error: unknown) => Object.assign(t, { state: 'rejected', error }));
  return t;
}

describe('password checks', () => {
  it('backs off the source of the guesses, not the user: another source naming the same user is checked at once', async () => {
    const s = setup();
    await backOff(s, '10.0.0.9');
    const other = s.checks.verify('root', 'right', 'h', '10.0.0.1');
    await settle();
    expect(s.bcrypt.calls.at(-1)).toBe('right');
    await s.bcrypt.finish();
    expect(await other).toBe(true);
  });

  it("checks a call inside its source's backoff when the backoff ends (never refuses it unchecked), and the right password clears it", async () => {
    const s = setup();
    await backOff(s, '10.0.0.9');
    const calls = s.bcrypt.calls.length;
    const right = track(s.checks.verify('root', 'right', 'h', '10.0.0.9'));
    await s.time.advance(passwordBackoffMsMin - 1);
    expect(s.bcrypt.calls.length).toBe(calls);
    expect(right.state).toBe('pending');
    await s.time.advance(1);
    expect(s.bcrypt.calls.length).toBe(calls + 1);
    await s.bcrypt.finish();
    expect(right).toMatchObject({ state: 'fulfilled', value: true });
    // Cleared: the free failures again, each checked at once.
    for (let i = 0; i < passwordFailuresFree; i++) {
      const r = s.checks.verify('root', 'wrong', 'h', '10.0.0.9');
      await settle();
      await s.bcrypt.finish();
      expect(await r).toBe(false);
    }
  });

  it('doubles a source’s backoff per failure', async () => {
    const s = setup();
    await backOff(s, 'a');
    const second = track(s.checks.verify('root', 'wrong', 'h', 'a'));
    await s.time.advance(passwordBackoffMsMin);
    await s.bcrypt.finish();
    expect(second).toMatchObject({ state: 'fulfilled', value: false });
    const third = track(s.checks.verify('root', 'wrong', 'h', 'a'));
    await s.time.advance(2 * passwordBackoffMsMin - 1);
    expect(s.bcrypt.pending).toHaveLength(0);
    await s.time.advance(1);
    expect(s.bcrypt.pending).toHaveLength(1);
    await s.bcrypt.finish();
    expect(third).toMatchObject({ state: 'fulfilled', value: false });
  });

  it('runs a right password from a clean source next, though 1,000 checks from an attacker wait and every slot is busy', async () => {
    const s = setup();
    await backOff(s, 'attacker');
    await backOff(s, 'attacker-2');
    await s.time.advance(passwordBackoffMsMin);
    const attack = [
      ...Array.from({ length: 1000 }, (_, i) => track(s.checks.verify('root', `guess-${i}`, 'h', 'attacker'))),
      ...Array.from({ length: 1000 }, (_, i) => track(s.checks.verify('root', `guess2-${i}`, 'h', 'attacker-2'))),
    ];
    await settle();
    expect(s.bcrypt.pending).toHaveLength(passwordChecksMax); // one per source, both slots
    const right = track(s.checks.verify('root', 'right', 'h', 'admin-host'));
    await s.bcrypt.finish(); // the attackers' next checks wait for their backoff; the clean source runs now
    expect(s.bcrypt.calls.at(-1)).toBe('right');
    await s.bcrypt.finishAll();
    expect(right).toMatchObject({ state: 'fulfilled', value: true });
    // One running and passwordChecksQueuedPerSourceMax waiting per source; the rest held, not checked.
    expect(attack.filter((a) => a.state !== 'pending')).toHaveLength(2);
    await s.time.advance(passwordBackoffMsMin * 2);
    const refused = attack.filter((a) => a.state === 'rejected');
    expect(refused).toHaveLength(2 * (1000 - 1 - passwordChecksQueuedPerSourceMax));
    expect(refused.every((a) => (a.error as Error).message === tooMany)).toBe(true);
  });

  it("answers a right password known from an earlier login at once, with no bcrypt, from the attacker's own source in backoff", async () => {
    const s = setup();
    const first = s.checks.verify('root', 'right', 'h', 'shared-nat');
    await settle();
    await s.bcrypt.finish();
    expect(await first).toBe(true);
    await backOff(s, 'shared-nat');
    const guessing = track(s.checks.verify('root', 'guess', 'h', 'shared-nat')); // waits for the backoff
    const calls = s.bcrypt.calls.length;
    expect(await s.checks.verify('root', 'right', 'h', 'shared-nat')).toBe(true);
    expect(s.bcrypt.calls.length).toBe(calls);
    expect(s.checks.counts().known).toBe(1);
    expect(guessing.state).toBe('pending');
    // A changed password is a new hash: the known one no longer matches it.
    const changed = track(s.checks.verify('root', 'right', 'h2', 'other'));
    await settle();
    expect(s.bcrypt.calls.length).toBe(calls + 1);
    await s.bcrypt.finish();
    expect(changed).toMatchObject({ state: 'fulfilled', value: true });
  });

  it(`holds at most ${passwordRefusalsHeldMax} refusals; past that they are answered at once, and held ones when the backoff ends`, async () => {
    const s = setup();
    await backOff(s, 'a');
    const admitted = Array.from({ length: passwordChecksQueuedPerSourceMax }, () => track(s.checks.verify('root', 'x', 'h', 'a')));
    const held = Array.from({ length: passwordRefusalsHeldMax }, () => track(s.checks.verify('root', 'x', 'h', 'a')));
    const timers = s.time.timers.length;
    await expect(s.checks.verify('root', 'right', 'h', 'a')).rejects.toThrow(tooMany);
    expect(s.time.timers.length).toBe(timers); // no timer for it
    await settle();
    expect(held.every((h) => h.state === 'pending')).toBe(true);
    await s.time.advance(passwordBackoffMsMin);
    expect(held.every((h) => h.state === 'rejected')).toBe(true);
    expect(s.checks.counts().refused).toBe(passwordRefusalsHeldMax + 1);
    expect(admitted.filter((a) => a.state === 'pending')).toHaveLength(passwordChecksQueuedPerSourceMax); // checked one by one
  });

  it('answers a refusal from a source not yet backing off no sooner than the shortest backoff', async () => {
    const s = setup();
    const admitted = Array.from({ length: 1 + passwordChecksQueuedPerSourceMax }, () => s.checks.verify('root', 'x', 'h', 'a'));
    const refused = track(s.checks.verify('root', 'x', 'h', 'a'));
    await s.time.advance(passwordBackoffMsMin - 1);
    expect(refused.state).toBe('pending');
    await s.time.advance(1);
    expect(refused.state).toBe('rejected');
    await s.bcrypt.finishAll();
    void Promise.allSettled(admitted);
  });

  it(`runs at most ${passwordChecksMax} at once and one per source; ${passwordChecksQueuedMax} wait per tier, more are refused`, async () => {
    const s = setup();
    const one = Array.from({ length: 3 }, () => s.checks.verify('u', 'right', 'h', 'same'));
    await settle();
    expect(s.bcrypt.pending).toHaveLength(1); // the source's other checks wait for it, not for a free slot
    // One of them runs; 'same''s two waiting ones count in the tier's queue.
    const many = Array.from({ length: 1 + passwordChecksQueuedMax - 2 }, (_, i) => s.checks.verify(`u${i}`, 'right', 'h', `s${i}`));
    const over = track(s.checks.verify('v', 'right', 'h', 'late'));
    await settle();
    expect(s.bcrypt.pending).toHaveLength(passwordChecksMax);
    await s.time.advance(passwordBackoffMsMin);
    expect(over.state).toBe('rejected');
    while (s.bcrypt.pending.length > 0) {
      expect(s.bcrypt.pending.length).toBeLessThanOrEqual(passwordChecksMax);
      await s.bcrypt.finish();
    }
    expect((await Promise.all([...one, ...many])).every((ok) => ok)).toBe(true);
    expect(s.bcrypt.calls.length).toBe(1 + many.length); // 'same' ran bcrypt once: then its password was known
  });

  it('hashes under their own cap: a queue of admin hashes never delays a password check', async () => {
    const time = manualTime();
    const bcrypt = heldBcrypt();
    const hashes: Array<() => void> = [];
    const checks = new PasswordChecks({
      now: time.now, sleep: time.sleep, verifyHash: bcrypt.verifyHash,
      hashPassword: () => new Promise((resolve) => hashes.push(() => resolve('$2b$...'))),
    });
    const hashing = Array.from({ length: passwordHashesMax + passwordHashesQueuedMax }, () => checks.hash('pw', 14));
    await expect(checks.hash('pw', 14)).rejects.toThrow(tooMany);
    const login = checks.verify('root', 'right', 'h', 'a');
    await settle();
    expect(bcrypt.calls).toEqual(['right']);
    await bcrypt.finish();
    expect(await login).toBe(true);
    while (hashes.length > 0) {
      hashes.shift()!();
      await settle();
    }
    await Promise.all(hashing);
  });

  it('checks real bcrypt hashes on the thread pool: the event loop keeps turning', async () => {
    const hash = hashSync('right', 10);
    const checks = new PasswordChecks();
    // The share of wall time the loop spent running code: a check on the loop's own thread keeps it busy for
    // the whole check (bcryptjs held it ~100 ms per slice), so twelve checks there read ~1. On the pool the loop
    // only waits. A share, not a wall-clock gap: on a loaded machine every gap stretches, but a loop that is
    // descheduled while it waits still counts as waiting.
    let ticks = 0;
    const timer = setInterval(() => { ticks += 1; }, 2);
    const before = performance.eventLoopUtilization();
    try {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => checks.verify(`u${i}`, i === 0 ? 'right' : 'wrong', hash, `s${i}`)));
      expect(results[0]).toBe(true);
      expect(results.slice(1).every((r) => !r)).toBe(true);
    } finally {
      clearInterval(timer);
    }
    const { utilization } = performance.eventLoopUtilization(before);
    expect(ticks, 'the loop turned while the checks ran').toBeGreaterThan(0);
    expect(utilization).toBeLessThan(0.5);
  });
});
