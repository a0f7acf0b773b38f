/**
 * Production-node seeds inside vitest: a run replays exactly from its seed, and every cluster size passes a
 * few seeds (the CLI run in CI covers a hundred: `npm run sim -- --seeds 1000`).
 */
import { describe, expect, it } from 'vitest';
import { runNodeSeed } from './run-node-seed.js';

describe('production-node seeds', () => {
  it('replay exactly: the same seed gives the same trace and the same numbers', async () => {
    for (const seed of [3, 77]) {
      const a: string[] = [];
      const b: string[] = [];
      const ra = await runNodeSeed({ seed, trace: (l) => a.push(l) });
      const rb = await runNodeSeed({ seed, trace: (l) => b.push(l) });
      expect(a.length).toBeGreaterThan(50);
      expect(b).toEqual(a);
      expect(rb.stats).toEqual(ra.stats);
    }
  });

  for (let nodes = 1; nodes <= 5; nodes++) {
    it(`${nodes} member(s): 4 seeds pass (chaos, liveness, linearizability and watch checks)`, async () => {
      const failures: string[] = [];
      for (let seed = 7000 + 100 * nodes; seed < 7004 + 100 * nodes; seed++) {
        const r = await runNodeSeed({ seed, nodes });
        if (!r.ok) failures.push(`seed ${seed}: ${r.error} — replay: npm run sim -- --seeds 0 --node-seeds 1 --start ${seed} --nodes ${nodes} --verbose`);
        else expect(r.stats.acked).toBeGreaterThan(50);
      }
      expect(failures).toEqual([]);
    });
  }

  it('witness seeds: 2 data + 1 witness and 4 data + 1 witness (the production witness factory) pass, one data member down in liveness', async () => {
    const failures: string[] = [];
    for (let seed = 7600; seed < 7604; seed++) {
      const r = await runNodeSeed({ seed, witness: true });
      expect(r.stats.nodes).toBe(seed % 2 === 0 ? 2 : 4);
      expect(r.stats.witnessStarts).toBeGreaterThan(0);
      if (!r.ok) failures.push(`seed ${seed}: ${r.error} — replay: npm run sim -- --seeds 0 --node-seeds 0 --node-witness-seeds 1 --start ${seed} --verbose`);
      else expect(r.stats.acked).toBeGreaterThan(50);
    }
    expect(failures).toEqual([]);
    // They replay exactly too: the witness adds no draw outside the seed.
    const a: string[] = [];
    const b: string[] = [];
    await runNodeSeed({ seed: 7601, witness: true, trace: (l) => a.push(l) });
    await runNodeSeed({ seed: 7601, witness: true, trace: (l) => b.push(l) });
    expect(b).toEqual(a);
  });
});
