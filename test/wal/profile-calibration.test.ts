/**
 * `--storage-profile auto` recalibrating from the log's own fdatasyncs (src/wal/profile-calibration.ts): the
 * window rule on its own, then a whole WAL on the simulated disk whose syncs advance a manual clock.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/base/clock.js';
import { walCalibrationBatchBytesMax, walCalibrationMarginRatio, walCalibrationWindowSyncs, walCalibrationWindowsToSwitch } from '../../src/base/limits.js';
import type { TimerHandle } from '../../src/base/scheduler.js';
import type { Entry } from '../../src/raft/types.js';
import { ProfileCalibration } from '../../src/wal/profile-calibration.js';
import { readProfileMemo } from '../../src/wal/profile-memo.js';
import type { ProfileChoice, ProfileName } from '../../src/wal/profiles.js';
import { Wal } from '../../src/wal/wal.js';
import { SimFs } from './sim-fs.js';

const W = walCalibrationWindowSyncs;
const small = 512;

/** Feeds whole windows of one latency each; the switches they called for. */
function feedWindows(c: ProfileCalibration, windowsMs: number[], batchBytes = small): Array<[ProfileName, ProfileName]> {
  const switches: Array<[ProfileName, ProfileName]> = [];
  for (const ms of windowsMs) {
    for (let i = 0; i < W; i++) {
      const r = c.observe(ms, batchBytes);
      if (r !== undefined) switches.push([r.from, r.profile]);
    }
  }
  return switches;
}

describe('ProfileCalibration', () => {
  it('needs the switch to take two windows past a 1.25 margin (the constants this file assumes)', () => {
    expect(walCalibrationWindowsToSwitch).toBe(2);
    expect(walCalibrationMarginRatio).toBe(1.25);
  });

  const cases: Array<{ name: string; from: ProfileName; windowsMs: number[]; switches: Array<[ProfileName, ProfileName]> }> = [
    { name: 'an emmc log whose syncs take 0.3 ms switches to ssd after two windows', from: 'emmc', windowsMs: [0.3, 0.3], switches: [['emmc', 'ssd']] },
    { name: 'one fast window is not enough', from: 'emmc', windowsMs: [0.3], switches: [] },
    { name: 'one odd window between agreeing ones never switches', from: 'ssd', windowsMs: [0.3, 4, 0.3, 0.3], switches: [] },
    { name: 'a window that agrees starts the count over', from: 'emmc', windowsMs: [0.3, 4, 0.3, 0.3], switches: [['emmc', 'ssd']] },
    { name: 'an ssd log on a card slower than probed goes to sd', from: 'ssd', windowsMs: [25, 30], switches: [['ssd', 'sd']] },
    { name: 'windows at emmc then sd move ssd to the nearer, emmc', from: 'ssd', windowsMs: [5, 25], switches: [['ssd', 'emmc']] },
    { name: 'windows on both sides of emmc never switch', from: 'emmc', windowsMs: [0.3, 25, 0.3, 25], switches: [] },
    { name: 'a median just past a threshold is within the margin: ssd at 2.4 ms stays', from: 'ssd', windowsMs: [2.4, 2.4, 2.4], switches: [] },
    { name: 'and emmc at 1.7 ms stays', from: 'emmc', windowsMs: [1.7, 1.7, 1.7], switches: [] },
    { name: 'past the margin it switches: ssd at 2.6 ms goes to emmc', from: 'ssd', windowsMs: [2.6, 2.6], switches: [['ssd', 'emmc']] },
    { name: 'after a switch the new profile is the one compared with', from: 'sd', windowsMs: [0.5, 0.5, 0.5, 0.5], switches: [['sd', 'ssd']] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(feedWindows(new ProfileCalibration(c.from), c.windowsMs)).toEqual(c.switches);
    });
  }

  it('judges a window by its median: a quarter of slow syncs does not move it', () => {
    const c = new ProfileCalibration('ssd');
    for (let w = 0; w < 2; w++) for (let i = 0; i < W; i++) expect(c.observe(i % 4 === 0 ? 50 : 0.3, small)).toBeUndefined();
    expect(c.profile).toBe('ssd');
  });

  it('ignores syncs of batches over walCalibrationBatchBytesMax', () => {
    const c = new ProfileCalibration('ssd');
    expect(feedWindows(c, [30, 30, 30], walCalibrationBatchBytesMax + 1)).toEqual([]);
    // ... and they fill no window: one window of small slow syncs is still only the first.
    expect(feedWindows(c, [30])).toEqual([]);
    expect(feedWindows(c, [30])).toEqual([['ssd', 'sd']]);
  });

  it('reports the median and the window size', () => {
    const c = new ProfileCalibration('emmc');
    feedWindows(c, [0.3]);
    let r;
    for (let i = 0; i < W; i++) r = c.observe(i < W / 2 ? 0.2 : 0.4, small);
    expect(r).toEqual({ from: 'emmc', profile: 'ssd', medianSyncMs: 0.4, syncs: W });
  });
});

const dir = '/cal';
const entry = (index: number, size: number): Entry => ({ term: 1, index, type: 0, data: new Uint8Array(size).fill(index & 0xff) });

/** A WAL on the simulated disk whose every sync takes `latencyMs` of the manual clock; a timer that counts windows. */
async function openTimed(fs: SimFs, clock: ManualClock, profile: ProfileChoice, lines: string[], windows: number[]) {
  const timer = {
    after(ms: number, fn: () => void): TimerHandle {
      windows.push(ms);
      const t = setTimeout(fn, 0);
      return { cancel: () => clearTimeout(t) };
    },
  };
  return Wal.open(dir, {
    fs, clock, profile, timer, logger: (l) => lines.push(l),
    tuning: { segmentBytes: 1 << 20, preallocate: false },
  });
}

function timedDisk(clock: ManualClock): { fs: SimFs; latency: { ms: number } } {
  const latency = { ms: 0 };
  const fs = new SimFs({
    beforeSync: async () => clock.advance(latency.ms),
  });
  return { fs, latency };
}

/** `n` saves one at a time (each its own batch and sync), entries of `size` bytes, from index `from`. */
async function saveEach(wal: Wal, from: number, n: number, size = 64): Promise<number> {
  for (let i = 0; i < n; i++) await wal.save({ entries: [entry(from + i, size)], hardState: { term: 1, vote: 0n, commit: 0 } });
  return from + n;
}

describe('Wal with --storage-profile auto', () => {
  it('switches an emmc probe to ssd after two windows of fast syncs, rewrites the memo, logs and counts it', async () => {
    const clock = new ManualClock();
    const { fs, latency } = timedDisk(clock);
    latency.ms = 4; // the disk is busy at the first open: the probe says emmc
    const lines: string[] = [];
    const windows: number[] = [];
    const { wal } = await openTimed(fs, clock, 'auto', lines, windows);
    expect(wal.profile).toBe('emmc');
    expect(await readProfileMemo(fs, dir)).toEqual({ profile: 'emmc', syncLatencyMs: 4 });
    latency.ms = 0.25;
    let next = await saveEach(wal, 1, W);
    expect(wal.profile).toBe('emmc'); // one window is not enough
    next = await saveEach(wal, next, W);
    expect(wal.profile).toBe('ssd');
    expect(wal.metrics).toMatchObject({ profile: 'ssd', measuredSyncLatencyMs: 0.25, profileRecalibrations: 1 });
    expect(lines.filter((l) => l.includes('recalibrated'))).toEqual([`wal: ${dir}: storage profile recalibrated from emmc to ssd: median fdatasync 0.25 ms over ${W} syncs`]);
    await wal.close();
    expect(await readProfileMemo(fs, dir)).toEqual({ profile: 'ssd', syncLatencyMs: 0.25 });
    // The next start begins where this one ended.
    const again = await openTimed(fs, clock, 'auto', lines, windows);
    expect(again.wal.profile).toBe('ssd');
    await again.wal.close();
  });

  it('runs on with the new profile when a full disk refuses the memo, which keeps the old one', async () => {
    const clock = new ManualClock();
    const latency = { ms: 4 };
    let full = false;
    const fs = new SimFs({
      beforeSync: async () => clock.advance(latency.ms),
      // The memo's temp file cannot be created (the log's own segment has room: 1 MiB, never filled).
      failOp: (op) => (full && op.startsWith('create ') && op.includes('storage-profile') ? 'ENOSPC' : false),
    });
    const lines: string[] = [];
    const { wal } = await openTimed(fs, clock, 'auto', lines, []);
    expect(wal.profile).toBe('emmc');
    latency.ms = 0.25;
    full = true;
    const next = await saveEach(wal, 1, 2 * W);
    expect(wal.profile).toBe('ssd');
    await saveEach(wal, next, 3); // not failed: the WAL takes saves
    expect(lines.filter((l) => l.includes('memo not rewritten'))).toEqual([`wal: ${dir}: storage profile memo not rewritten (no space left): the next start begins with emmc`]);
    await wal.close();
    full = false;
    expect(await readProfileMemo(fs, dir)).toEqual({ profile: 'emmc', syncLatencyMs: 4 });
  });

  it('applies the new profile\'s commit delay to the next batches (ssd to sd on a slow card)', async () => {
    const clock = new ManualClock();
    const { fs, latency } = timedDisk(clock);
    latency.ms = 0.3;
    const windows: number[] = [];
    const { wal } = await openTimed(fs, clock, 'auto', [], windows);
    expect(wal.profile).toBe('ssd');
    latency.ms = 30;
    const next = await saveEach(wal, 1, 2 * W);
    expect(wal.profile).toBe('sd');
    expect(windows).toEqual([]); // ssd has no commit delay: no window was ever opened
    // Concurrent saves now: the batch behind the first waits for the sd profile's window (4 ms).
    await Promise.all(Array.from({ length: 4 }, (_, i) => wal.save({ entries: [entry(next + i, 64)] })));
    expect(windows.length).toBeGreaterThan(0);
    expect(new Set(windows)).toEqual(new Set([4]));
    await wal.close();
  });

  it('ignores big batches: slow syncs of 32 KiB batches never switch', async () => {
    const clock = new ManualClock();
    const { fs, latency } = timedDisk(clock);
    latency.ms = 0.3;
    const { wal } = await openTimed(fs, clock, 'auto', [], []);
    latency.ms = 30;
    await saveEach(wal, 1, 2 * W + 10, 2 * walCalibrationBatchBytesMax);
    expect(wal.metrics).toMatchObject({ profile: 'ssd', profileRecalibrations: 0 });
    await wal.close();
  });

  for (const profile of ['emmc', 'remeasure'] as const) {
    it(`never switches a profile that was not chosen by auto (${profile})`, async () => {
      const clock = new ManualClock();
      const { fs, latency } = timedDisk(clock);
      latency.ms = 4;
      const { wal } = await openTimed(fs, clock, profile, [], []);
      expect(wal.profile).toBe('emmc');
      latency.ms = 0.2;
      await saveEach(wal, 1, 3 * W);
      expect(wal.metrics).toMatchObject({ profile: 'emmc', profileRecalibrations: 0 });
      await wal.close();
    });
  }
});
