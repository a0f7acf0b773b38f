/**
 * The flash-wear maths (src/metrics/wear.ts) on an injected clock: the projection, the sliding day, the
 * larger of two counts, when a projection may warn, and the fsync quantiles of the last minute.
 */
import { describe, expect, it } from 'vitest';
import { Histogram } from '../../src/base/histogram.js';
import {
  RecentHistogram, WearMeter, bytesPerTb, fsyncWindowMs, projectLifeYears, quantileBetween, wearWarningSpanMsMin, wearWindowMs,
} from '../../src/metrics/wear.js';

const hour = 3_600_000;
const day = 24 * hour;

describe('projectLifeYears', () => {
  it.each([
    // enduranceBytes, bytesPerDay, years
    [4e12, 3e9, 4e12 / 3e9 / 365.25], // the worked example: 1,333 days, 3.65 years
    [1e12, 1e12 / 365.25, 1],
    [4e12, 0, Infinity],
  ])('a %d-byte disk written at %d bytes a day lasts the expected years', (endurance, perDay, years) => {
    expect(projectLifeYears(endurance, perDay)).toBeCloseTo(years, 9);
  });

  it('refuses a negative rate and a zero endurance (programmer errors)', () => {
    expect(() => projectLifeYears(4e12, -1)).toThrow();
    expect(() => projectLifeYears(0, 1)).toThrow();
  });
});

describe('WearMeter', () => {
  const meter = (): WearMeter => new WearMeter({ enduranceBytes: 4 * bytesPerTb, warningYears: 3 });

  it('has no rate before any time passed since its first sample', () => {
    const m = meter();
    expect(m.view(0, { wal: 0, backend: 0, process: 0 }).rate).toBeUndefined();
    m.sample(1000, { wal: 10, backend: 10, process: 10 });
    const v = m.view(1000, { wal: 20, backend: 20, process: 20 });
    expect(v.rate).toBeUndefined();
    expect(v.projectedLifeYears).toBeUndefined();
    expect(v.warning).toBe(false);
  });

  it('measures from the first sample: 1 MB in one hour is 24 MB a day, per counter and in all', () => {
    const m = meter();
    m.sample(0, { wal: 100, backend: 200, process: 50 });
    const v = m.view(hour, { wal: 100 + 600_000, backend: 200 + 400_000, process: 50 + 200_000 });
    expect(v.rate!.walPerDay).toBeCloseTo(14_400_000, 6);
    expect(v.rate!.backendPerDay).toBeCloseTo(9_600_000, 6);
    expect(v.rate!.processPerDay).toBeCloseTo(4_800_000, 6);
    // The member's own count (1 MB) is larger than the kernel's (0.2 MB): the projection takes it.
    expect(v.rate!.perDay).toBeCloseTo(24_000_000, 6);
    expect(v.rate!.spanMs).toBe(hour);
    expect(v.projectedLifeYears).toBeCloseTo(4e12 / 24e6 / 365.25, 6);
  });

  it("takes the kernel's count when it is the larger (page-sized writes of small records)", () => {
    const m = meter();
    m.sample(0, { wal: 0, backend: 0, process: 0 });
    const v = m.view(day, { wal: 1e9, backend: 0, process: 3e9 });
    expect(v.rate!.perDay).toBeCloseTo(3e9, 3);
    expect(v.projectedLifeYears).toBeCloseTo(3.6505, 3);
  });

  it('works without the kernel count (not Linux)', () => {
    const m = meter();
    m.sample(0, { wal: 0, backend: 0, process: undefined });
    const v = m.view(day, { wal: 2e9, backend: 1e9, process: undefined });
    expect(v.rate!.processPerDay).toBeUndefined();
    expect(v.rate!.perDay).toBeCloseTo(3e9, 3);
  });

  it('slides over the last day: a burst more than a day old no longer counts', () => {
    const m = meter();
    m.sample(0, { wal: 0, backend: 0, process: 0 });
    m.sample(hour, { wal: 50e9, backend: 0, process: 0 }); // a 50 GB burst in the first hour
    for (let t = 2 * hour; t <= day + 2 * hour; t += hour) m.sample(t, { wal: 50e9 + ((t - hour) / day) * 1e9, backend: 0, process: 0 });
    const now = day + 2 * hour;
    const v = m.view(now, { wal: 50e9 + ((now - hour) / day) * 1e9, backend: 0, process: 0 });
    // The window starts at the oldest sample at most a day old (t = 2 h): after the burst.
    expect(v.rate!.spanMs).toBe(wearWindowMs);
    expect(v.rate!.perDay).toBeCloseTo(1e9, 0);
  });

  it('warns only under the threshold, and only once the rate covers the minimum span', () => {
    const m = meter();
    m.sample(0, { wal: 0, backend: 0, process: 0 });
    // 4 TB at 5 GB a day: 2.2 years, under 3.
    const rate = 5e9 / day;
    const at = (ms: number) => m.view(ms, { wal: rate * ms, backend: 0, process: 0 });
    // Nothing projected from less than the declared minimum window (issue 32, item 4): the view is measuring.
    expect(at(wearWarningSpanMsMin - 1).projectedLifeYears).toBeUndefined();
    expect(at(wearWarningSpanMsMin - 1).rate?.spanMs).toBe(wearWarningSpanMsMin - 1);
    expect(at(wearWarningSpanMsMin - 1).warning).toBe(false);
    expect(at(wearWarningSpanMsMin).projectedLifeYears).toBeLessThan(3);
    expect(at(wearWarningSpanMsMin).warning).toBe(true);
    // 3 GB a day: 3.65 years, no warning.
    const slow = meter();
    slow.sample(0, { wal: 0, backend: 0, process: 0 });
    expect(slow.view(2 * hour, { wal: (3e9 / day) * 2 * hour, backend: 0, process: 0 }).warning).toBe(false);
  });

  it('refuses samples out of time order (programmer error)', () => {
    const m = meter();
    m.sample(10, { wal: 0, backend: 0, process: 0 });
    expect(() => m.sample(9, { wal: 0, backend: 0, process: 0 })).toThrow();
  });
});

describe('quantileBetween', () => {
  const bounds = [0.001, 0.002, 0.004, 0.008];
  const snapshot = (values: number[]) => {
    const h = new Histogram(bounds);
    for (const v of values) h.observe(v);
    return h.snapshot();
  };

  it('interpolates inside the bucket, as histogram_quantile does', () => {
    // 10 observations: 4 in (0, 1 ms], 4 in (1, 2 ms], 2 in (2, 4 ms].
    const h = snapshot([...Array(4).fill(0.0005), ...Array(4).fill(0.0015), 0.003, 0.003]);
    expect(quantileBetween(0.5, undefined, h)).toBeCloseTo(0.00125, 9); // rank 5: 1/4 into (1, 2 ms]
    expect(quantileBetween(0.99, undefined, h)).toBeCloseTo(0.002 + 0.002 * (9.9 - 8) / 2, 9);
  });

  it('counts only what was observed after the older snapshot', () => {
    const h = new Histogram(bounds);
    for (let i = 0; i < 100; i++) h.observe(0.0005);
    const older = h.snapshot();
    for (let i = 0; i < 10; i++) h.observe(0.006);
    expect(quantileBetween(0.5, older, h.snapshot())).toBeCloseTo(0.006, 9);
  });

  it('is undefined with nothing observed, and the last bound for the +Inf bucket', () => {
    expect(quantileBetween(0.5, undefined, snapshot([]))).toBeUndefined();
    expect(quantileBetween(0.99, undefined, snapshot([5]))).toBe(0.008);
  });
});

describe('RecentHistogram', () => {
  it('reports the syncs of the last minute: from the newest snapshot at least a minute old', () => {
    const h = new Histogram([0.001, 0.01, 0.1]);
    const recent = new RecentHistogram();
    // Slow syncs at first, then fast ones; snapshots every 10 s.
    for (let t = 0; t <= 120_000; t += 10_000) {
      for (let i = 0; i < 5; i++) h.observe(t < 60_000 ? 0.05 : 0.0005);
      recent.sample(t, h.snapshot());
    }
    const r = recent.between(125_000, h.snapshot(), [0.5, 0.99]);
    expect(r.spanMs).toBe(125_000 - 60_000);
    expect(r.spanMs).toBeGreaterThanOrEqual(fsyncWindowMs);
    expect(r.count).toBe(6 * 5); // t = 70 s … 120 s
    expect(r.quantiles[1]).toBeLessThanOrEqual(0.001);
  });

  it('uses every observation while younger than a minute, and none is undefined', () => {
    const h = new Histogram([0.001, 0.01]);
    const recent = new RecentHistogram();
    recent.sample(0, h.snapshot());
    expect(recent.between(5_000, h.snapshot(), [0.5]).quantiles[0]).toBeUndefined();
    h.observe(0.005);
    const r = recent.between(5_000, h.snapshot(), [0.5]);
    expect(r.count).toBe(1);
    expect(r.spanMs).toBe(5_000);
  });
});
