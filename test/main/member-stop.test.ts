/**
 * The stop sequence of a member (src/main/member-stop.ts): stages run in the stop's order whatever order the
 * parts were built in, once; a failing stage does not keep the log and the store open; a request made while
 * the member starts stops it as soon as it runs, and the first reason is the one reported.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/config/log.js';
import { MemberStop } from '../../src/main/member-stop.js';

const order = ['server', 'grpc', 'transport', 'wal'] as const;

function stopWith(): { stop: MemberStop<(typeof order)[number]>; ran: string[]; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stop = new MemberStop(createLogger({ sink: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) }), order, 'stopped');
  return { stop, ran: [], lines };
}

describe('MemberStop', () => {
  it('runs the stages in the stop order, not the order they were added, and only once', async () => {
    const { stop, ran, lines } = stopWith();
    stop.add('wal', () => ran.push('wal'));
    stop.add('transport', () => ran.push('transport'));
    stop.add('grpc', async () => ran.push('grpc'));
    stop.add('server', () => ran.push('server'));
    await Promise.all([stop.run(), stop.run()]);
    await stop.run();
    expect(ran).toEqual(['server', 'grpc', 'transport', 'wal']);
    expect(lines.filter((l) => l.msg === 'stopped')).toHaveLength(1);
    expect(Object.keys(lines.find((l) => l.msg === 'stopped')!.ms as object)).toEqual(['server', 'grpc', 'transport', 'wal']);
  });

  it('closes the rest when a stage fails, then rejects with that failure', async () => {
    const { stop, ran, lines } = stopWith();
    stop.add('server', () => Promise.reject(new Error('leadership transfer failed')));
    stop.add('wal', () => ran.push('wal'));
    await expect(stop.run()).rejects.toThrow('leadership transfer failed');
    expect(ran).toEqual(['wal']);
    expect(lines.some((l) => l.msg === 'a stop stage failed' && l.stage === 'server')).toBe(true);
  });

  it('stops at once when armed after a request made during the start; the first reason is reported', async () => {
    const { stop, ran } = stopWith();
    stop.add('wal', () => ran.push('wal'));
    stop.fatal(new Error('fdatasync: EIO'));
    stop.request('removed from the cluster');
    expect(ran).toEqual([]); // not before the member runs: the start itself fails or finishes first
    await expect(stop.stopped).resolves.toEqual({ reason: 'fatal: fdatasync: EIO' });
    stop.arm();
    await stop.run();
    expect(ran).toEqual(['wal']);
  });

  it('stops when asked once it runs', async () => {
    const { stop, ran } = stopWith();
    stop.add('transport', () => ran.push('transport'));
    stop.arm();
    stop.request('removed from the cluster');
    await stop.run();
    expect(ran).toEqual(['transport']);
    await expect(stop.stopped).resolves.toEqual({ reason: 'removed from the cluster' });
  });

  it('refuses a stage added twice', () => {
    const { stop } = stopWith();
    stop.add('wal', () => undefined);
    expect(() => stop.add('wal', () => undefined)).toThrow(/added twice/);
  });
});
