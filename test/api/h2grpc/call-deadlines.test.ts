/**
 * The gRPC server's call deadlines (issue 34): one timer for every call's grpc-timeout, on a manual
 * scheduler. Deadlines fire at their time and in order whatever order the calls came in, a finished call never
 * fires, the timer is not re-armed per call, and finished calls do not pile up behind a long-lived one.
 */
import { describe, expect, it } from 'vitest';
import { CallDeadlines } from '../../../src/api/h2grpc/call-deadlines.js';
import { manualScheduler } from '../../manual-scheduler.js';

describe('CallDeadlines', () => {
  it('expires calls at their deadlines, in deadline order, whatever order they came in', () => {
    const s = manualScheduler();
    const d = new CallDeadlines(s);
    const fired: string[] = [];
    d.add(100, () => fired.push('a@100'));
    s.advance(10);
    d.add(100, () => fired.push('b@110'));
    s.advance(10);
    d.add(50, () => fired.push('c@70'));
    expect(s.armed()).toBe(1);
    s.advance(49);
    expect(fired).toEqual([]);
    s.advance(1);
    expect(fired).toEqual(['c@70']);
    s.advance(29);
    expect(fired).toEqual(['c@70']);
    s.advance(1);
    expect(fired).toEqual(['c@70', 'a@100']);
    s.advance(10);
    expect(fired).toEqual(['c@70', 'a@100', 'b@110']);
    expect(d.live).toBe(0);
    expect(s.armed()).toBe(0);
  });

  it('never fires a canceled call, and a canceled head leaves the list at once', () => {
    const s = manualScheduler();
    const d = new CallDeadlines(s);
    const fired: string[] = [];
    const a = d.add(100, () => fired.push('a'));
    const b = d.add(200, () => fired.push('b'));
    d.add(300, () => fired.push('c'));
    b.cancel();
    expect(d.listed).toBe(3); // b is behind a: marked only
    a.cancel();
    expect(d.listed).toBe(1); // a was the head: a and b leave
    a.cancel(); // idempotent
    expect(d.live).toBe(1);
    s.advance(300);
    expect(fired).toEqual(['c']);
  });

  it('arms the one timer once per timeout, not per call, when every call finishes in time (one client)', () => {
    const s = manualScheduler();
    const d = new CallDeadlines(s);
    for (let i = 0; i < 1000; i++) {
      d.add(5000, () => expect.unreachable('finished call fired')).cancel();
      s.advance(1);
    }
    // 1000 calls over 1 s with a 5 s timeout: the first arm only; the timer lapses at 5 s.
    expect(s.arms()).toBe(1);
    expect(d.listed).toBe(0);
    s.advance(5000);
    expect(s.armed()).toBe(0);
  });

  it('re-arms for a call due before the armed deadline, and after a lapse for the next live call', () => {
    const s = manualScheduler();
    const d = new CallDeadlines(s);
    let fired = 0;
    d.add(1000, () => fired++).cancel(); // timer armed at 1000, now lapsing
    d.add(2000, () => fired++); // later than the armed one: no new arm
    expect(s.arms()).toBe(1);
    d.add(10, () => fired++); // earlier: re-armed
    expect(s.arms()).toBe(2);
    expect(s.armed()).toBe(1);
    s.advance(10);
    expect(fired).toBe(1);
    s.advance(1990);
    expect(fired).toBe(2);
    expect(s.armed()).toBe(0);
  });

  it('keeps the list bounded by the live calls behind a long-lived one', () => {
    const s = manualScheduler();
    const d = new CallDeadlines(s);
    const long = d.add(3_600_000, () => {});
    s.advance(1);
    for (let i = 0; i < 10_000; i++) {
      // Deadlines after the long call's: they queue behind it once finished.
      d.add(3_600_000, () => {}).cancel();
    }
    expect(d.live).toBe(1);
    expect(d.listed).toBeLessThanOrEqual(2 + 64);
    long.cancel();
    expect(d.listed).toBe(0);
  });

  it('lets an expiring call add and cancel others from its handler', () => {
    const s = manualScheduler();
    const d = new CallDeadlines(s);
    const fired: string[] = [];
    const b = d.add(100, () => fired.push('b'));
    d.add(100, () => {
      fired.push('a');
      b.cancel(); // already expired in the same round: a no-op
      d.add(10, () => fired.push('c'));
    });
    s.advance(100);
    expect(fired).toEqual(['b', 'a']);
    s.advance(10);
    expect(fired).toEqual(['b', 'a', 'c']);
  });
});
