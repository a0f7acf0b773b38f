/**
 * Storage profiles. A profile is a set of tuning knobs for one class of device:
 * - segmentBytes: segment size. Segments are preallocated, so smaller segments release disk sooner.
 * - preallocate: zero-fill each segment (and fsync it) before use, off the hot path. Then an append never
 *   changes the file size or allocates blocks, so fdatasync writes only the data pages and no journal commit
 *   (ext4 commits its journal on every size-changing fdatasync). Node has no fallocate(2); and fallocate's
 *   unwritten extents would need a journal commit on first write anyway, so zero-filling is what pays.
 * - batchBytesMax: a write batch is cut at this size (a single bigger save is a batch of its own).
 * - recycleSegmentsMax: released segments kept as spares and reused instead of zero-filling new ones
 *   (needs preallocate; 0 turns recycling off).
 * - inlineWriteBytesMax: a batch up to this size is written on the calling thread (a pwrite into the page
 *   cache, ~20 µs) instead of on the thread pool, whose round trip (two cross-thread wake-ups) measured
 *   ~110 µs per write on a 2-vCPU VM (src/wal/README.md): a tenth of a single client's put. Its fdatasync always stays on the pool,
 *   so the loop never waits for the device. Only on SSDs: on slow flash a write can be throttled while the
 *   kernel writes back dirty pages, which must never hold up heartbeats. 0 turns it off.
 * - commitDelayMs: on slow devices, under concurrency, wait at most this long for the writers of the last
 *   sync to be back beside those queued behind it (save-queue.ts), so they share the next sync. 0 on SSD: a
 *   sync is cheaper than the wait.
 *
 * `auto` times a few small fdatasyncs in the data directory at its first open, picks by the median and
 * remembers the choice (profile-memo.ts); while the log runs it keeps timing its own syncs and switches when
 * they disagree with the choice for long enough (profile-calibration.ts).
 */
import { assert } from '../base/index.js';
import type { FsPort } from './fs-port.js';

export type ProfileName = 'ssd' | 'emmc' | 'sd';
/** `auto`: the profile remembered in the data directory, or measured once and remembered; `remeasure`: measure again. */
export type ProfileChoice = ProfileName | 'auto' | 'remeasure';

export interface WalTuning {
  segmentBytes: number;
  preallocate: boolean;
  batchBytesMax: number;
  commitDelayMs: number;
  recycleSegmentsMax: number;
  inlineWriteBytesMax: number;
}

const MiB = 1024 * 1024;

export const profiles: Readonly<Record<ProfileName, Readonly<WalTuning>>> = {
  ssd: { segmentBytes: 64 * MiB, preallocate: true, batchBytesMax: 1 * MiB, commitDelayMs: 0, recycleSegmentsMax: 2, inlineWriteBytesMax: 64 * 1024 },
  emmc: { segmentBytes: 32 * MiB, preallocate: true, batchBytesMax: 2 * MiB, commitDelayMs: 1, recycleSegmentsMax: 2, inlineWriteBytesMax: 0 },
  sd: { segmentBytes: 16 * MiB, preallocate: true, batchBytesMax: 4 * MiB, commitDelayMs: 4, recycleSegmentsMax: 2, inlineWriteBytesMax: 0 },
};

/** Median sync latency thresholds for `auto`: SSDs sync in well under 2 ms, eMMC in a few ms, SD cards slower. */
export const autoSsdSyncMsMax = 2;
export const autoEmmcSyncMsMax = 10;
const probeSyncs = 5;

export function pickProfile(medianSyncMs: number): ProfileName {
  if (medianSyncMs <= autoSsdSyncMsMax) return 'ssd';
  if (medianSyncMs <= autoEmmcSyncMsMax) return 'emmc';
  return 'sd';
}

export function validateTuning(t: WalTuning): void {
  assert(Number.isSafeInteger(t.segmentBytes) && t.segmentBytes >= 4096, 'segmentBytes must be ≥ 4096');
  assert(t.segmentBytes % 8 === 0, 'segmentBytes must be a multiple of 8');
  assert(Number.isSafeInteger(t.batchBytesMax) && t.batchBytesMax >= 1024, 'batchBytesMax must be ≥ 1024');
  assert(Number.isSafeInteger(t.recycleSegmentsMax) && t.recycleSegmentsMax >= 0, 'recycleSegmentsMax must be ≥ 0');
  assert(t.commitDelayMs >= 0 && t.commitDelayMs <= 1000, 'commitDelayMs must be in [0, 1000]');
  assert(Number.isSafeInteger(t.inlineWriteBytesMax) && t.inlineWriteBytesMax >= 0, 'inlineWriteBytesMax must be ≥ 0');
}

/**
 * Median latency of small overwrite+fdatasync cycles on a scratch file in `dir` (the first cycle, which
 * allocates the block, is not counted). Writes about 24 KiB in all.
 */
export async function measureSyncLatencyMs(fs: FsPort, dir: string, nowMs: () => number): Promise<number> {
  const path = `${dir}/sync-probe.tmp`;
  await fs.unlink(path).catch(() => undefined);
  const file = await fs.open(path, 'create');
  const page = new Uint8Array(4096);
  const samples: number[] = [];
  try {
    for (let i = 0; i <= probeSyncs; i++) {
      page[0] = i;
      const start = nowMs();
      await file.write(page, page.length, 0);
      await file.datasync();
      if (i > 0) samples.push(nowMs() - start);
    }
  } finally {
    await file.close();
    await fs.unlink(path);
  }
  samples.sort((a, b) => a - b);
  return samples[samples.length >> 1]!;
}
