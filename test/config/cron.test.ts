/** Cron specs as k3s's --etcd-snapshot-schedule-cron reads them (src/config/cron.ts); times are local. */
import { describe, expect, it } from 'vitest';
import { CronError, parseCron } from '../../src/config/cron.js';

const local = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0): number => new Date(y, mo - 1, d, h, mi, s).getTime();
const show = (ms: number): string => {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
};
function firings(spec: string, fromMs: number, n: number): string[] {
  const s = parseCron(spec);
  const out: string[] = [];
  let t = fromMs;
  for (let i = 0; i < n; i++) out.push(show((t = s.next(t))));
  return out;
}

describe('parseCron', () => {
  const from = local(2026, 12, 1, 5, 0, 0); // a Tuesday
  it.each([
    ['0 */12 * * *', ['2026-12-01 12:00:00', '2026-12-02 00:00:00', '2026-12-02 12:00:00']],
    ['*/15 9-10 * * *', ['2026-12-01 09:00:00', '2026-12-01 09:15:00', '2026-12-01 09:30:00']],
    ['30 4,17 * * *', ['2026-12-01 17:30:00', '2026-12-02 04:30:00', '2026-12-02 17:30:00']],
    ['0 0 * * sat,sun', ['2026-12-05 00:00:00', '2026-12-06 00:00:00', '2026-12-12 00:00:00']],
    ['0 0 1 jan *', ['2027-01-01 00:00:00', '2028-01-01 00:00:00', '2029-01-01 00:00:00']],
    ['0 0 13 * 5', ['2026-12-04 00:00:00', '2026-12-11 00:00:00', '2026-12-13 00:00:00']],
    ['0 0 * * 7', ['2026-12-06 00:00:00', '2026-12-13 00:00:00', '2026-12-20 00:00:00']],
    ['10-20/5 0 6 * *', ['2026-12-06 00:10:00', '2026-12-06 00:15:00', '2026-12-06 00:20:00']],
    ['*/2 * * * * *', ['2026-12-01 05:00:02', '2026-12-01 05:00:04', '2026-12-01 05:00:06']],
    ['@hourly', ['2026-12-01 06:00:00', '2026-12-01 07:00:00', '2026-12-01 08:00:00']],
    ['@daily', ['2026-12-02 00:00:00', '2026-12-03 00:00:00', '2026-12-04 00:00:00']],
    ['@every 90s', ['2026-12-01 05:01:30', '2026-12-01 05:03:00', '2026-12-01 05:04:30']],
  ])('%s fires at the right times', (spec, want) => {
    expect(firings(spec, from, 3)).toEqual(want);
  });

  it('fires strictly after the given time, at whole seconds', () => {
    expect(show(parseCron('* * * * * *').next(from + 400))).toBe('2026-12-01 05:00:01');
    expect(show(parseCron('0 12 * * *').next(local(2026, 12, 1, 12)))).toBe('2026-12-02 12:00:00');
  });

  it.each([
    ['', /expected 5 fields/],
    ['* * * *', /expected 5 fields/],
    ['60 * * * *', /minute "60": must be 0-59/],
    ['* 24 * * *', /hour "24"/],
    ['* * 0 * *', /day of month "0"/],
    ['* * * 13 *', /month "13"/],
    ['* * * * 8', /day of week "8"/],
    ['*/0 * * * *', /step must be a positive integer/],
    ['5-1 * * * *', /range start 5 is after its end 1/],
    ['a * * * *', /minute "a"/],
    ['0 0 30 feb *', /never fires/],
    ['@every 0s', /at least 1s/],
    ['@every soon', /at least 1s/],
  ])('refuses %j', (spec, message) => {
    expect(() => parseCron(spec)).toThrow(CronError);
    expect(() => parseCron(spec)).toThrow(message);
  });
});

describe('@every takes any Go duration of at least 1s (the grammar: test/config/duration.test.ts)', () => {
  it.each([['@every 1h30m', 5_400_000], ['@every 1.5h', 5_400_000], ['@every 45s', 45_000], ['@every 2m3s', 123_000]])('%s fires every %d ms', (spec, ms) => {
    expect(parseCron(spec).next(1_000)).toBe(1_000 + ms);
  });
});
