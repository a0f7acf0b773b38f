/**
 * ProcessFaults (src/main/process-faults.ts): an error nothing caught is logged, runs the member's stop
 * sequence once, bounded in time, and exits 1. The real process: test/e2e/process-faults.test.ts.
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/config/log.js';
import { ProcessFaults } from '../../src/main/process-faults.js';

function faultsWith(): { source: EventEmitter; faults: ProcessFaults; exits: number[]; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const exits: number[] = [];
  const faults = new ProcessFaults({ logger: createLogger({ sink: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) }), exit: (code) => exits.push(code), stopBoundMs: 1000 });
  const source = new EventEmitter();
  faults.install(source);
  return { source, faults, exits, lines };
}

describe('ProcessFaults', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('logs an unhandled rejection, runs the stop sequence once, then exits 1', async () => {
    const { source, faults, exits, lines } = faultsWith();
    let stops = 0;
    let finish!: () => void;
    faults.stopWith(() => {
      stops++;
      return new Promise<void>((resolve) => (finish = resolve));
    });
    source.emit('unhandledRejection', new Error('backend write failed'));
    source.emit('uncaughtException', new Error('and then this')); // while stopping: logged, nothing more
    await vi.advanceTimersByTimeAsync(0);
    expect(exits).toEqual([]);
    finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(stops).toBe(1);
    expect(exits).toEqual([1]);
    const errors = lines.filter((l) => l.level === 'error').map((l) => [l.msg, l.error]);
    expect(errors).toEqual([
      ['unhandled promise rejection: a bug escaped every handler; stopping', 'backend write failed'],
      ['uncaught exception: a bug escaped every handler; stopping', 'and then this'],
    ]);
  });

  it('exits 1 after the bound when the stop sequence hangs', async () => {
    const { source, faults, exits, lines } = faultsWith();
    faults.stopWith(() => new Promise<void>(() => {}));
    source.emit('uncaughtException', new Error('boom'));
    await vi.advanceTimersByTimeAsync(999);
    expect(exits).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(exits).toEqual([1]);
    expect(lines.some((l) => l.msg === 'the stop after an uncaught error did not finish in time; exiting')).toBe(true);
  });

  it('exits 1 at once when nothing runs yet, and when the stop sequence fails', async () => {
    const early = faultsWith();
    early.source.emit('unhandledRejection', 'not even an Error');
    expect(early.exits).toEqual([1]);
    const failing = faultsWith();
    failing.faults.stopWith(() => Promise.reject(new Error('a stage failed')));
    failing.source.emit('uncaughtException', new Error('boom'));
    await vi.advanceTimersByTimeAsync(0);
    expect(failing.exits).toEqual([1]);
  });
});
