/**
 * Fill seeds inside vitest (issue 32, run-fill-seed.ts): writers of 64 KiB values fill every member's 64 MiB
 * simulated disk; NOSPACE must be raised before ENOSPC reaches a WAL or backend, no member may exit, reads
 * and deletes work, no acked write is lost, and del + compact + defrag + alarm disarm let writes resume.
 * With the disk watch keeping no reserve the same seeds fail (ENOSPC reaches the backend or the WAL): the
 * check can fail.
 */
import { describe, expect, it } from 'vitest';
import { runFillSeed } from './run-fill-seed.js';

async function failuresOf(seeds: number[], reserveIgnored = false): Promise<string[]> {
  const failures: string[] = [];
  for (const seed of seeds) {
    const r = await runFillSeed({ seed, reserveIgnored });
    if (!r.ok) failures.push(`seed ${seed}: ${r.error}`);
    else {
      expect(r.stats.refused).toBeGreaterThan(0);
      expect(r.stats.resumed).toBeGreaterThan(0);
    }
  }
  return failures;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('disk fills (production node, simulated disk of a capacity)', () => {
  it('seeds 1–10: NOSPACE before ENOSPC, nothing acked lost, the recovery lets writes resume', async () => {
    expect(await failuresOf(range(1, 10))).toEqual([]);
  }, 120_000);

  it('seeds 11–20: the same', async () => {
    expect(await failuresOf(range(11, 20))).toEqual([]);
  }, 120_000);

  it('with a reserve of 0 the seeds fail: ENOSPC reaches a member before NOSPACE', async () => {
    const seeds = [3, 4, 7]; // one-member seeds: quick
    const failures = await failuresOf(seeds, true);
    expect(failures).toHaveLength(seeds.length);
    for (const f of failures) expect(f).toMatch(/ENOSPC/);
  }, 120_000);

  it('slow disks and lossy links (--fill-faults): a follower is sent snapshots of the full store, admitted only with room to restore them', async () => {
    // Seeds 1 and 51 met ENOSPC restoring a snapshot (seed 2 too, once the restore's 2·S was modelled). Seed
    // 2's follower can never fit its 23 MB one (3·S on a 64 MiB disk): it stays behind with NOSPACE up, alive,
    // and catches up after the recovery.
    const behind: number[] = [];
    for (const seed of [1, 2, 51]) {
      const r = await runFillSeed({ seed, faults: true });
      expect(r.error).toBeUndefined();
      behind.push(r.stats.behind);
    }
    expect(behind[1]).toBeGreaterThan(0);
    // Without the admission seeds 1 and 51 meet ENOSPC restoring a snapshot: the check can fail. (Seed 2 did
    // too until the WAL's fewer promises per save changed its schedule; with the admission it still stays behind.)
    for (const seed of [1, 51]) expect((await runFillSeed({ seed, faults: true, snapshotRoomIgnored: true })).error).toMatch(/ENOSPC/);
  }, 180_000);

  it('replays exactly: the same seed gives the same trace', async () => {
    const a: string[] = [];
    const b: string[] = [];
    await runFillSeed({ seed: 9, trace: (l) => a.push(l) });
    await runFillSeed({ seed: 9, trace: (l) => b.push(l) });
    expect(a.length).toBeGreaterThan(5);
    expect(b).toEqual(a);
  }, 120_000);
});
