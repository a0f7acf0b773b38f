/**
 * Password checks off the event loop and bounded (issue 20, item 6): a burst of guesses at one user costs
 * one bcrypt run per backoff, at most passwordChecksMax run at once, a flood past the queue is refused, and
 * real bcrypt leaves the event loop free.
 */
import { describe, expect, it } from 'vitest';
import { hashSync, verifySync } from '@node-rs/bcrypt';
import {
  passwordBackoffMsMin,
  passwordChecksMax,
  passwordChecksQueuedMax,
  passwordFailuresFree,
  passwordRefusalsHeldMax,
} from '../../../src/base/limits.js';
import { PasswordChecks } from '../../../src/node/access/password-checks.js';

/** A fake bcrypt: answers `right === password` after `ms`, counting calls and the most at once. */
function fakeBcrypt(ms: number, right = 'right'): { verifyHash: (p: string) => Promise<boolean>; calls: number; atOnceMax: number } {
  const f = {
    calls: 0,
    atOnceMax: 0,
    running: 0,
    verifyHash: async (p: string): Promise<boolean> => {
      f.calls++;
      f.running++;
      f.atOnceMax = Math.max(f.atOnceMax, f.running);
      await new Promise((r) => setTimeout(r, ms));
      f.running--;
      return p === right;
    },
  };
  return f;
}

describe('password checks', () => {
  it('answers a burst of 50 wrong passwords for one user with a few bcrypt runs, not 50', async () => {
    const bcrypt = fakeBcrypt(10);
    const checks = new PasswordChecks({ verifyHash: bcrypt.verifyHash });
    const results = await Promise.all(Array.from({ length: 50 }, () => checks.verify('root', 'guess', 'hash')));
    expect(results.every((r) => r === false)).toBe(true);
    expect(bcrypt.calls).toBeLessThanOrEqual(passwordFailuresFree + passwordChecksMax);
  });

  it('answers a mistyped password and then the right one at once, as etcd does', async () => {
    const checks = new PasswordChecks({ verifyHash: fakeBcrypt(0).verifyHash });
    for (let i = 0; i < passwordFailuresFree - 1; i++) expect(await checks.verify('u', 'wrong', 'h')).toBe(false);
    expect(await checks.verify('u', 'right', 'h')).toBe(true);
  });

  it('fails inside the backoff without bcrypt, checks again after it, and the right password clears it', async () => {
    let now = 1_000_000;
    const bcrypt = fakeBcrypt(0);
    const checks = new PasswordChecks({ now: () => now, verifyHash: bcrypt.verifyHash });
    for (let i = 0; i <= passwordFailuresFree; i++) expect(await checks.verify('u', 'wrong', 'h')).toBe(false);
    expect(await checks.verify('u', 'right', 'h')).toBe(false); // inside the backoff: not even checked
    expect(bcrypt.calls).toBe(passwordFailuresFree + 1);
    expect(await checks.verify('other', 'right', 'h')).toBe(true); // another user is not held back
    now += passwordBackoffMsMin;
    expect(await checks.verify('u', 'right', 'h')).toBe(true);
    for (let i = 0; i < passwordFailuresFree; i++) expect(await checks.verify('u', 'wrong', 'h')).toBe(false);
    expect(await checks.verify('u', 'right', 'h')).toBe(true); // cleared: the free failures again
  });

  it('answers a refusal inside the backoff when the backoff ends, so a caller retrying on each answer is slowed to one per backoff', async () => {
    let now = 0;
    const slept: number[] = [];
    const release: Array<() => void> = [];
    const sleep = (ms: number): Promise<void> => {
      slept.push(ms);
      return new Promise((resolve) => release.push(resolve));
    };
    const checks = new PasswordChecks({ now: () => now, verifyHash: fakeBcrypt(0).verifyHash, sleep });
    for (let i = 0; i <= passwordFailuresFree; i++) expect(await checks.verify('u', 'wrong', 'h')).toBe(false);
    expect(slept).toEqual([]); // the free failures and the one that starts the backoff are answered at once
    now += 100;
    let answered = false;
    const held = checks.verify('u', 'wrong', 'h').then((ok) => {
      answered = true;
      return ok;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(answered).toBe(false);
    expect(slept).toEqual([passwordBackoffMsMin - 100]);
    release.shift()!();
    expect(await held).toBe(false);
  });

  it(`holds at most ${passwordRefusalsHeldMax} refusals; past that they are answered at once`, async () => {
    const pending: Array<() => void> = [];
    const checks = new PasswordChecks({ now: () => 0, verifyHash: fakeBcrypt(0).verifyHash, sleep: () => new Promise((r) => pending.push(r)) });
    for (let i = 0; i <= passwordFailuresFree; i++) await checks.verify('u', 'wrong', 'h');
    const held = Array.from({ length: passwordRefusalsHeldMax }, () => checks.verify('u', 'wrong', 'h'));
    expect(await checks.verify('u', 'wrong', 'h')).toBe(false);
    expect(pending).toHaveLength(passwordRefusalsHeldMax);
    for (const r of pending) r();
    expect((await Promise.all(held)).every((ok) => !ok)).toBe(true);
  });

  it('doubles the backoff per failure', async () => {
    let now = 0;
    const bcrypt = fakeBcrypt(0);
    const checks = new PasswordChecks({ now: () => now, verifyHash: bcrypt.verifyHash });
    for (let i = 0; i <= passwordFailuresFree; i++) await checks.verify('u', 'wrong', 'h');
    now += passwordBackoffMsMin;
    await checks.verify('u', 'wrong', 'h');
    now += passwordBackoffMsMin;
    expect(await checks.verify('u', 'right', 'h')).toBe(false); // second wait is twice as long
    now += passwordBackoffMsMin;
    expect(await checks.verify('u', 'right', 'h')).toBe(true);
  });

  it(`runs at most ${passwordChecksMax} at once, queues ${passwordChecksQueuedMax}, and refuses more as too many requests`, async () => {
    const bcrypt = fakeBcrypt(20);
    const checks = new PasswordChecks({ verifyHash: bcrypt.verifyHash });
    const n = passwordChecksMax + passwordChecksQueuedMax;
    const accepted = Array.from({ length: n }, (_, i) => checks.verify(`user${i}`, 'right', 'h'));
    await expect(checks.verify('one-too-many', 'right', 'h')).rejects.toThrow('etcdserver: too many requests');
    expect((await Promise.all(accepted)).every((r) => r)).toBe(true);
    expect(bcrypt.atOnceMax).toBe(passwordChecksMax);
  });

  it('checks real bcrypt hashes on the thread pool: the event loop keeps turning', async () => {
    const hash = hashSync('right', 10);
    // One check on the loop's own thread, measured here: on a loaded machine every figure stretches alike.
    const t0 = performance.now();
    verifySync('wrong', hash);
    const onLoopMs = performance.now() - t0;
    const checks = new PasswordChecks();
    let last = performance.now();
    let gapMaxMs = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      gapMaxMs = Math.max(gapMaxMs, now - last);
      last = now;
    }, 2);
    try {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => checks.verify(`u${i}`, i === 0 ? 'right' : 'wrong', hash)));
      expect(results[0]).toBe(true);
      expect(results.slice(1).every((r) => !r)).toBe(true);
    } finally {
      clearInterval(timer);
    }
    // bcryptjs held the loop ~100 ms per slice, and a check on the loop would hold it a whole check at a time;
    // on the pool the loop only waits for its own work.
    expect(gapMaxMs).toBeLessThan(Math.max(50, onLoopMs / 2));
  });
});
