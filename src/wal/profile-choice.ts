/** Which disk profile a WAL runs with, and its tuning. */
import type { FsPort } from './fs-port.js';
import { readProfileMemo, writeProfileMemo } from './profile-memo.js';
import { measureSyncLatencyMs, pickProfile, profiles, type ProfileChoice, type ProfileName, type WalTuning } from './profiles.js';

/**
 * The profile: given, or (`auto`) the one remembered in the directory, or measured now and remembered
 * (`remeasure` always measures). `nowMs` times the measurement (the WAL's clock).
 */
export async function chooseProfile(
  fs: FsPort,
  dir: string,
  options: { profile?: ProfileChoice; tuning?: Partial<WalTuning> },
  nowMs: () => number,
): Promise<{ profile: ProfileName; measured: number | undefined; tuning: WalTuning; memo: 'remembered' | 'written' | 'none'; calibrate: boolean }> {
  const choice = options.profile ?? 'auto';
  const memo = await readProfileMemo(fs, dir);
  let profile: ProfileName;
  let measured: number | undefined;
  let memoUse: 'remembered' | 'written' | 'none' = 'none';
  if (choice === 'auto' && memo !== undefined) {
    profile = memo.profile;
    measured = memo.syncLatencyMs;
    memoUse = 'remembered';
  } else if (choice === 'auto' || choice === 'remeasure') {
    measured = await measureSyncLatencyMs(fs, dir, nowMs);
    profile = pickProfile(measured);
    await writeProfileMemo(fs, dir, { profile, syncLatencyMs: measured });
    memoUse = 'written';
  } else {
    profile = choice;
  }
  const tuning = { ...profiles[profile], ...options.tuning };
  // Only `auto` keeps calibrating (profile-calibration.ts): a given profile is the operator's, and `remeasure`
  // asked for this open's measurement.
  return { profile, measured, tuning, memo: memoUse, calibrate: choice === 'auto' };
}
