/**
 * The wait registry's deadlines (issue 34): one timer for all of them, on a manual scheduler. Deadlines fire
 * at their time and in order, settled waiters never fire, and the one timer is all that is ever armed.
 */
import { describe, expect, it } from 'vitest';
import { WaitRegistry } from '../../../src/node/request/wait.js';
import { manualScheduler } from '../../manual-scheduler.js';
import { settle } from '../../settle.js';

/** Registers `id` and records, in order, when and how it settles. */
function watch(reg: WaitRegistry<string>, s: { nowMs(): number }, log: string[], id: bigint, timeoutMs: number): void {
  reg.register(id, timeoutMs, () => new Error(`timeout ${id}`)).then(
    (v) => log.push(`${id} ${v} @${s.nowMs()}`),
    (e: Error) => log.push(`${e.message} @${s.nowMs()}`),
  );
}

describe('the wait registry', () => {
  it('fires each deadline at its time, in order, with one timer armed', async () => {
    const s = manualScheduler();
    const reg = new WaitRegistry<string>(16, s);
    const log: string[] = [];
    watch(reg, s, log, 1n, 100);
    s.advance(10);
    watch(reg, s, log, 2n, 100);
    watch(reg, s, log, 3n, 50); // earlier than both: the timer is re-armed for it
    expect(s.armed()).toBe(1);
    s.advance(49);
    await settle();
    expect(log).toEqual([]);
    s.advance(1);
    await settle();
    expect(log).toEqual(['timeout 3 @60']);
    s.advance(40);
    await settle();
    expect(log).toEqual(['timeout 3 @60', 'timeout 1 @100']);
    s.advance(10);
    await settle();
    expect(log).toEqual(['timeout 3 @60', 'timeout 1 @100', 'timeout 2 @110']);
    expect(reg.size).toBe(0);
    expect(s.armed()).toBe(0);
  });

  it('never fires a waiter that was triggered or failed first', async () => {
    const s = manualScheduler();
    const reg = new WaitRegistry<string>(16, s);
    const log: string[] = [];
    for (const id of [1n, 2n, 3n, 4n]) watch(reg, s, log, id, 100);
    reg.trigger(1n, 'applied');
    await settle();
    s.advance(30);
    reg.fail(3n, new Error('canceled 3'));
    reg.trigger(2n, 'late');
    await settle();
    s.advance(70);
    await settle();
    expect(log).toEqual(['1 applied @0', 'canceled 3 @30', '2 late @30', 'timeout 4 @100']);
    // A trigger after the timeout, and a second trigger, find nobody.
    reg.trigger(4n, 'too late');
    reg.trigger(1n, 'again');
    await settle();
    expect(log).toHaveLength(4);
    expect(s.armed()).toBe(0);
  });

  it('lets the timer lapse once nothing waits, and re-arms at its firing only for a waiter', async () => {
    const s = manualScheduler();
    const reg = new WaitRegistry<string>(16, s);
    const log: string[] = [];
    watch(reg, s, log, 1n, 100);
    reg.trigger(1n, 'ok');
    await settle();
    expect(s.armed()).toBe(1); // not canceled: it lapses
    s.advance(100);
    expect(s.armed()).toBe(0); // fired at 100, nothing waits: not re-armed
    s.advance(400);
    watch(reg, s, log, 2n, 100);
    expect(s.armed()).toBe(1);
    s.advance(100);
    await settle();
    expect(log).toEqual(['1 ok @0', 'timeout 2 @600']);
    expect(s.armed()).toBe(0);
  });

  it('arms one timer per timeout, not per request, for one client', async () => {
    const s = manualScheduler();
    const reg = new WaitRegistry<string>(16, s);
    const log: string[] = [];
    // One client: each put is registered and answered before the next; 1,000 puts a second for 10 s.
    for (let id = 1n; id <= 10_000n; id++) {
      watch(reg, s, log, id, 1000);
      reg.trigger(id, 'ok');
      expect(reg.listed).toBe(0);
      s.advance(1);
    }
    await settle();
    expect(log.filter((l) => l.includes('timeout'))).toEqual([]);
    // Armed at 0 for 1000; it fires with nothing waiting, the next put arms it for 2000, and so on: 10 arms
    // where a timer per put (or an arm and a cancel per put) made 10,000.
    expect(s.arms()).toBe(10);
  });

  it('drops a settled waiter from the list once it is at the head', () => {
    const s = manualScheduler();
    const reg = new WaitRegistry<string>(16, s);
    const log: string[] = [];
    for (const id of [1n, 2n, 3n, 4n]) watch(reg, s, log, id, 100);
    reg.trigger(2n, 'ok'); // behind 1: stays listed
    expect(reg.listed).toBe(4);
    reg.trigger(1n, 'ok'); // the head: 1 and 2 leave
    expect(reg.listed).toBe(2);
    reg.trigger(3n, 'ok');
    expect(reg.listed).toBe(1);
    expect(reg.size).toBe(1);
  });

  it('arms no timer after failAll (a stopped member keeps nothing armed)', () => {
    const s = manualScheduler();
    const reg = new WaitRegistry<string>(16, s);
    const log: string[] = [];
    watch(reg, s, log, 1n, 100);
    reg.failAll(new Error('stopped'));
    expect(s.armed()).toBe(0);
  });

  it('times out nothing that was answered under a steady stream, with one timer armed', async () => {
    const s = manualScheduler();
    const reg = new WaitRegistry<string>(1024, s);
    const log: string[] = [];
    let id = 1n;
    for (let i = 0; i < 10_000; i++) {
      watch(reg, s, log, id, 7000);
      // Each request is answered a few registrations later, as a pipeline of proposals is.
      if (id > 4n) reg.trigger(id - 4n, 'ok');
      id++;
      s.advance(1);
    }
    expect(reg.size).toBe(4);
    expect(s.armed()).toBe(1);
    await settle();
    expect(log.filter((l) => l.includes('timeout'))).toEqual([]);
  });

  it('refuses past its cap', () => {
    const s = manualScheduler();
    const reg = new WaitRegistry<string>(2, s);
    const log: string[] = [];
    watch(reg, s, log, 1n, 100);
    expect(reg.full).toBe(false);
    watch(reg, s, log, 2n, 100);
    expect(reg.full).toBe(true);
  });
});
