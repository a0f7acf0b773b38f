/**
 * Many deadlines on one lapsing timer (src/base/lapsing-deadlines.ts), on a manual scheduler: expiry in
 * deadline order with arrival order kept for equal deadlines, one timer that lapses instead of being
 * canceled, a list bounded by the live entries, and the 1 ms floor that keeps an early timer from spinning.
 */
import { describe, expect, it } from 'vitest';
import { LapsingDeadlines, type Lapsing } from '../../src/base/lapsing-deadlines.js';
import { deadlinesFinishedListedMin } from '../../src/base/limits.js';
import type { Scheduler } from '../../src/base/scheduler.js';
import { manualScheduler } from '../manual-scheduler.js';

interface Named extends Lapsing {
  name: string;
}

function list(s: Scheduler) {
  const fired: string[] = [];
  const d = new LapsingDeadlines<Named>(s, (e) => fired.push(`${e.name}@${s.nowMs()}`));
  const add = (name: string, timeoutMs: number): Named => {
    const e = { name, deadlineMs: s.nowMs() + timeoutMs, done: false };
    d.add(e);
    return e;
  };
  return { d, fired, add };
}

describe('LapsingDeadlines', () => {
  it('expires entries in deadline order, equal deadlines in arrival order, with one timer armed', () => {
    const s = manualScheduler();
    const { d, fired, add } = list(s);
    add('a', 100);
    add('b', 50);
    add('c', 100);
    add('d', 50);
    add('e', 75);
    expect(s.armed()).toBe(1);
    expect(s.arms()).toBe(2); // for a, then re-armed for b; the others are due no earlier
    s.advance(100);
    expect(fired).toEqual(['b@50', 'd@50', 'e@75', 'a@100', 'c@100']);
    expect(d.live).toBe(0);
    expect(s.armed()).toBe(0);
  });

  it('follows the worked example of its doc comment', () => {
    const s = manualScheduler();
    const { d, fired, add } = list(s);
    const a = add('a', 100);
    s.advance(10);
    add('b', 100);
    s.advance(10);
    add('c', 50);
    expect(s.arms()).toBe(2); // 100, then 70
    s.advance(10);
    d.finish(a);
    expect(d.listed).toBe(3); // a is behind c: marked only
    s.advance(40);
    expect(fired).toEqual(['c@70']);
    expect(d.listed).toBe(1); // a dropped with c
    s.advance(40);
    expect(fired).toEqual(['c@70', 'b@110']);
  });

  it('lets the timer lapse when entries finish, and re-arms at its firing only for a live one', () => {
    const s = manualScheduler();
    const { d, fired, add } = list(s);
    d.finish(add('a', 100));
    expect(d.listed).toBe(0);
    expect(s.armed()).toBe(1); // not canceled
    add('b', 150); // later than the armed deadline: no new arm
    expect(s.arms()).toBe(1);
    s.advance(100); // fires at 100 with b not due: re-armed for 150
    expect(s.arms()).toBe(2);
    expect(s.armed()).toBe(1);
    s.advance(50);
    expect(fired).toEqual(['b@150']);
    expect(s.armed()).toBe(0);
  });

  it('never expires a finished entry, and finish is idempotent and a no-op after expiry', () => {
    const s = manualScheduler();
    const { d, fired, add } = list(s);
    const a = add('a', 10);
    const b = add('b', 20);
    add('c', 30);
    d.finish(b);
    d.finish(b);
    expect(d.live).toBe(2);
    s.advance(10);
    d.finish(a); // already expired
    expect(d.live).toBe(1);
    s.advance(20);
    expect(fired).toEqual(['a@10', 'c@30']);
  });

  it('keeps the list bounded by the live entries behind a long-lived one', () => {
    const s = manualScheduler();
    const { d, add } = list(s);
    const long = add('long', 3_600_000);
    s.advance(1);
    for (let i = 0; i < 10_000; i++) d.finish(add(`x${i}`, 3_600_000));
    expect(d.live).toBe(1);
    expect(d.listed).toBeLessThanOrEqual(2 + deadlinesFinishedListedMin);
    d.finish(long);
    expect(d.listed).toBe(0);
  });

  it('compacts the dropped prefix: the list stays about as long as the live entries under a steady stream', () => {
    const s = manualScheduler();
    const { d, fired, add } = list(s);
    const open: Named[] = [];
    for (let i = 0; i < 10_000; i++) {
      open.push(add(`x${i}`, 7000));
      // Each is finished a few additions later, as a pipeline of proposals is answered.
      if (open.length > 4) d.finish(open.shift()!);
      expect(d.listed).toBe(open.length);
      s.advance(1);
    }
    expect(fired).toEqual([]);
    expect(s.armed()).toBe(1);
  });

  it('arms at least 1 ms ahead, so a timer that fires early re-arms instead of spinning', () => {
    const manual = manualScheduler();
    // Node's timers may fire a fraction of a millisecond before performance.now() reaches the deadline.
    const early: Scheduler = { ...manual, after: (ms, fn, o) => manual.after(ms - 0.5, fn, o) };
    const { fired, add } = list(early);
    add('now', 0);
    add('a', 10);
    manual.advance(0.5);
    expect(fired).toEqual(['now@0.5']); // armed for 1 ms (less 0.5), not 0
    manual.advance(9); // fires at 9.5 with a not due: re-armed 1 ms ahead, not 0.5
    expect(fired).toEqual(['now@0.5']);
    expect(manual.armed()).toBe(1);
    manual.advance(0.5);
    expect(fired).toEqual(['now@0.5', 'a@10']);
    expect(manual.arms()).toBe(3);
  });

  it('runs handlers after the due entries left the list: a handler may add and finish others', () => {
    const s = manualScheduler();
    const fired: string[] = [];
    const entries = new Map<string, Named>();
    const d = new LapsingDeadlines<Named>(s, (e) => {
      fired.push(e.name);
      if (e.name !== 'a') return;
      d.finish(entries.get('b')!); // due in the same round: already expired, a no-op
      d.finish(entries.get('c')!);
      const late = { name: 'late', deadlineMs: s.nowMs() + 10, done: false };
      d.add(late);
    });
    for (const [name, ms] of [['a', 100], ['b', 100], ['c', 200]] as const) {
      const e = { name, deadlineMs: ms, done: false };
      entries.set(name, e);
      d.add(e);
    }
    s.advance(100);
    expect(fired).toEqual(['a', 'b']);
    s.advance(200);
    expect(fired).toEqual(['a', 'b', 'late']);
    expect(s.armed()).toBe(0);
  });

  it('stops with no timer armed once every entry is finished, and refuses to stop with live ones', () => {
    const s = manualScheduler();
    const { d, add } = list(s);
    const a = add('a', 100);
    expect(() => d.stop()).toThrow('deadlines stopped with live entries');
    d.finish(a);
    d.stop();
    expect(s.armed()).toBe(0);
  });
});
