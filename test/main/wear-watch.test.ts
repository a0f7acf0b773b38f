/**
 * The wear watch (src/main/wear-watch.ts) on an injected clock and counters: the warning is logged once when
 * the projection falls under the threshold, not again while it stays there, and again after it recovered.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/config/log.js';
import { Histogram } from '../../src/base/histogram.js';
import { WearWatch } from '../../src/main/wear-watch.js';
import { wearWarningSpanMsMin } from '../../src/metrics/wear.js';

const hour = 3_600_000;

function watchWith(): { watch: WearWatch; lines: string[]; set(atMs: number, wal: number): void } {
  const lines: string[] = [];
  let now = 0;
  let wal = 0;
  const watch = new WearWatch({
    enduranceTbw: 1, // 1e12 bytes
    warningYears: 2,
    walBytes: () => wal,
    backendBytes: () => 0,
    processBytes: () => undefined,
    fsyncSeconds: () => new Histogram([0.001]).snapshot(),
    logger: createLogger({ sink: (l) => lines.push(l), now: () => 't' }),
    nowMs: () => now,
  });
  return { watch, lines, set: (atMs, bytes) => ((now = atMs), (wal = bytes)) };
}

describe('WearWatch', () => {
  it('warns once under the threshold, and again only after recovering', () => {
    const { watch, lines, set } = watchWith();
    watch.sampleWear(); // t = 0: the rate starts here
    // 1e12 bytes last 2 years at 1.369e9 a day; write 2e9 a day (1.37 years).
    const fast = 2e9 / (24 * hour);
    for (let t = hour / 4; t <= 3 * hour; t += hour / 4) {
      set(t, fast * t);
      watch.sampleWear();
    }
    const warnings = () => lines.filter((l) => l.includes('projected life is under'));
    expect(warnings()).toHaveLength(1);
    const w = JSON.parse(warnings()[0]!) as { projectedLifeYears: number; warningYears: number; measuredOverHours: number };
    expect(w.projectedLifeYears).toBeCloseTo(1e12 / 2e9 / 365.25, 2);
    expect(w.warningYears).toBe(2);
    expect(w.measuredOverHours).toBeGreaterThanOrEqual(wearWarningSpanMsMin / hour);
    expect(watch.view().warning).toBe(true);
    // Writes stop for long enough that the rate falls under the threshold's: the warning clears.
    const written = fast * 3 * hour;
    set(30 * hour, written);
    watch.sampleWear();
    expect(watch.view().warning).toBe(false);
    // And a new burst warns again.
    set(31 * hour, written + 1e12);
    watch.sampleWear();
    expect(warnings()).toHaveLength(2);
  });
});
