/**
 * Random scenarios inside vitest: a run replays exactly from its seed, and every cluster size from 1 to 7
 * passes a batch of seeds (the CLI run in CI covers 1,000 seeds of mixed sizes).
 */
import { describe, expect, it } from 'vitest';
import { runSeed } from './run-seed.js';

describe('random scenarios', () => {
  it('replay exactly: the same seed gives the same trace and the same numbers', () => {
    for (const seed of [7, 4242]) {
      const a: string[] = [];
      const b: string[] = [];
      const ra = runSeed({ seed, trace: (l) => a.push(l) });
      const rb = runSeed({ seed, trace: (l) => b.push(l) });
      expect(a.length).toBeGreaterThan(20);
      expect(b).toEqual(a);
      expect(rb.stats).toEqual(ra.stats);
    }
  });

  for (let nodes = 1; nodes <= 7; nodes++) {
    it(`${nodes} voter(s): 25 seeds pass (safety after every step, then liveness)`, () => {
      const failures: string[] = [];
      for (let seed = 5000 + 100 * nodes; seed < 5025 + 100 * nodes; seed++) {
        const r = runSeed({ seed, nodes });
        if (!r.ok) failures.push(`seed ${seed}: ${r.error} — replay: npm run sim -- --seeds 1 --start ${seed} --nodes ${nodes} --verbose`);
      }
      expect(failures).toEqual([]);
    });
  }
});
