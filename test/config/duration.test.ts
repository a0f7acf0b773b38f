import { describe, expect, it } from 'vitest';
import { parseDurationMs, parseRetentionMs } from '../../src/config/duration.js';

describe('parseDurationMs reads Go durations as time.ParseDuration does', () => {
  it.each([
    ['0', 0],
    ['+0', 0],
    ['-0s', 0],
    ['300ms', 300],
    ['5s', 5_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['2h45m10s', 9_910_000],
    ['1.5s', 1_500],
    ['.5s', 500],
    ['1.s', 1_000],
    ['-1.5s', -1_500],
    ['+2m', 120_000],
    ['1500us', 1.5],
    ['1500µs', 1.5],
    ['1500μs', 1.5],
    ['2000000ns', 2],
    ['1m0.5s', 60_500],
    ['2562047h', 2562047 * 3_600_000],
  ])('%j is %d ms', (text, ms) => {
    expect(parseDurationMs(text)).toBe(ms);
  });

  it.each(['', '-', '+', '5', 'm', '5x', '1d', '1h 30m', ' 1h', '1h ', '.s', '1..5s', '5 s', '1h-30m', '3000000h'])(
    '%j is malformed',
    (text) => {
      expect(parseDurationMs(text)).toBeUndefined();
    },
  );
});

describe('parseRetentionMs reads --auto-compaction-retention in periodic mode as etcd does', () => {
  it.each([
    ['1', 3_600_000],
    ['0', 0],
    ['1.5', 5_400_000],
    ['30m', 1_800_000],
    ['1h30m', 5_400_000],
    ['5s', 5_000],
    [' 2h ', 7_200_000],
  ])('%j is %d ms', (text, ms) => {
    expect(parseRetentionMs(text)).toBe(ms);
  });

  it.each(['five minutes', '-1h', '1d', ''])('%j is refused', (text) => {
    expect(parseRetentionMs(text)).toBeUndefined();
  });
});
