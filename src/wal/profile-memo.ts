/**
 * What `--storage-profile auto` measured, remembered in the WAL directory (`storage-profile`, JSON), so the
 * device is measured once, not at every start: a measurement takes about a second and, on a disk whose
 * fdatasync latency sits near a threshold, picked a different profile from one start to the next.
 * `--storage-profile remeasure` measures again and replaces the memo; `auto`'s calibration rewrites it when it
 * switches profile while running (profile-calibration.ts).
 */
import { writeFileAtomically } from './atomic-file.js';
import type { FsPort } from './fs-port.js';
import type { ProfileName } from './profiles.js';

export interface ProfileMemo {
  profile: ProfileName;
  /** Median fdatasync latency measured (absent when the profile was given, not measured). */
  syncLatencyMs?: number;
}

const memoName = 'storage-profile';
const profileNames = new Set<string>(['ssd', 'emmc', 'sd']);

export async function readProfileMemo(fs: FsPort, dir: string): Promise<ProfileMemo | undefined> {
  const bytes = await fs.readFile(`${dir}/${memoName}`);
  if (bytes === undefined) return undefined;
  try {
    const j = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    if (typeof j.profile !== 'string' || !profileNames.has(j.profile)) return undefined;
    return {
      profile: j.profile as ProfileName,
      ...(typeof j.syncLatencyMs === 'number' ? { syncLatencyMs: j.syncLatencyMs } : {}),
    };
  } catch {
    return undefined; // unreadable: measure again and rewrite it
  }
}

/** temp file (removed by recovery if a crash leaves it), sync, rename, directory sync. */
export async function writeProfileMemo(fs: FsPort, dir: string, memo: ProfileMemo): Promise<void> {
  await writeFileAtomically(fs, `${dir}/${memoName}`, new TextEncoder().encode(`${JSON.stringify(memo)}\n`));
}
