/**
 * `--storage-profile auto`, while the log runs: the probe at the first open (5 syncs, profiles.ts) can meet
 * a momentarily busy disk (measured: an SSD member given `emmc` at a 4.18 ms median while its two peers got
 * `ssd` at 0.23 ms), and an SD card's cache can hide its latency from so short a probe. So the log keeps
 * timing its own fdatasyncs and corrects the choice, in both directions.
 *
 * - Only syncs of small batches count (≤ walCalibrationBatchBytesMax written since the previous sync): a big
 *   batch's longer sync measures its size, not the device, and would push a busy SSD towards `emmc`.
 * - Samples fill a window of walCalibrationWindowSyncs (a fixed array, sorted in place once full: no
 *   allocation per sync); the window's median (the upper one, as the probe takes) classifies like the probe
 *   (pickProfile), except that it leaves the current profile only past a threshold by walCalibrationMarginRatio
 *   (ssd → emmc above 2.5 ms, emmc → ssd at or below 1.6 ms), and the window starts over.
 * - Hysteresis: a switch needs walCalibrationWindowsToSwitch consecutive windows that all classify away
 *   from the current profile, on the same side of it; it goes to the nearest of their profiles (ssd, then
 *   emmc 2 ms, then sd 10 ms: a window at `sd` after one at `emmc` moves an `ssd` log to `emmc` only).
 *   A window that agrees with the current profile, or points the other way, starts the count over.
 *
 * Worked example (windows of 256, 2 to switch), current `emmc`: window 1 median 0.3 ms (ssd: streak 1),
 * window 2 median 4 ms (emmc: streak 0), window 3 median 0.3 ms (streak 1), window 4 median 0.25 ms
 * (streak 2): switch to `ssd` with median 0.25 ms over 256 syncs.
 */
import { assert } from '../base/index.js';
import { walCalibrationBatchBytesMax, walCalibrationMarginRatio, walCalibrationWindowSyncs, walCalibrationWindowsToSwitch } from '../base/limits.js';
import { pickProfile, type ProfileName } from './profiles.js';

/** A switch the windows call for: to `profile`, the last window's median sync latency over its syncs. */
export interface Recalibration {
  from: ProfileName;
  profile: ProfileName;
  medianSyncMs: number;
  syncs: number;
}

/** Faster to slower: the side of the current profile a window points to. */
const rank: Readonly<Record<ProfileName, number>> = { ssd: 0, emmc: 1, sd: 2 };

export class ProfileCalibration {
  readonly #samplesMs = new Float64Array(walCalibrationWindowSyncs);
  #count = 0;
  #profile: ProfileName;
  /** Consecutive full windows that classified away from #profile, all on one side of it. */
  #streak = 0;
  /** Of those windows' profiles, the nearest to #profile: where a switch goes. */
  #nearest: ProfileName;

  constructor(profile: ProfileName) {
    this.#profile = profile;
    this.#nearest = profile;
  }

  get profile(): ProfileName {
    return this.#profile;
  }

  /**
   * One fdatasync that took `syncMs` after `batchBytes` were written. Returns the switch due when this sync
   * completed a window that makes the streak, and takes it as the current profile; else undefined.
   */
  observe(syncMs: number, batchBytes: number): Recalibration | undefined {
    if (batchBytes > walCalibrationBatchBytesMax) return undefined;
    assert(syncMs >= 0, `negative sync latency ${syncMs}`);
    this.#samplesMs[this.#count++] = syncMs;
    if (this.#count < walCalibrationWindowSyncs) return undefined;
    this.#count = 0;
    this.#samplesMs.sort();
    const medianSyncMs = this.#samplesMs[walCalibrationWindowSyncs >> 1]!;
    return this.#windowClassified(this.#classify(medianSyncMs), medianSyncMs);
  }

  /** pickProfile's answer, but away from the current profile only past its threshold by the margin ratio. */
  #classify(medianSyncMs: number): ProfileName {
    const slower = pickProfile(medianSyncMs / walCalibrationMarginRatio);
    if (rank[slower] > rank[this.#profile]) return slower;
    const faster = pickProfile(medianSyncMs * walCalibrationMarginRatio);
    return rank[faster] < rank[this.#profile] ? faster : this.#profile;
  }

  #windowClassified(classified: ProfileName, medianSyncMs: number): Recalibration | undefined {
    const side = Math.sign(rank[classified] - rank[this.#profile]);
    if (side === 0 || (this.#streak > 0 && side !== Math.sign(rank[this.#nearest] - rank[this.#profile]))) {
      // Agrees with the current profile, or turned to the other side: the count starts over (from this one).
      this.#streak = side === 0 ? 0 : 1;
      this.#nearest = classified;
      return undefined;
    }
    if (this.#streak === 0 || Math.abs(rank[classified] - rank[this.#profile]) < Math.abs(rank[this.#nearest] - rank[this.#profile])) this.#nearest = classified;
    this.#streak++;
    if (this.#streak < walCalibrationWindowsToSwitch) return undefined;
    const switched: Recalibration = { from: this.#profile, profile: this.#nearest, medianSyncMs, syncs: walCalibrationWindowSyncs };
    this.#profile = this.#nearest;
    this.#streak = 0;
    return switched;
  }
}
