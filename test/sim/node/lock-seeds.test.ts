/**
 * Lock/Election seeds inside vitest (the CLI run in CI covers more: `npm run sim -- --seeds 1000`); odd seeds run
 * with auth. Each of seeds 1–4 fails with the Lock recipe's wait for older contenders taken out, and with the
 * Campaign's; seeds 1 and 3 fail with auth's token clock back on performance.now (tokens never expire in
 * simulated time) and with puts unchecked in apply (test/sim/FINDINGS.md, N10).
 */
import { describe, expect, it } from 'vitest';
import { runNodeSeed } from './run-node-seed.js';

describe('Lock, Election and auth (production node)', () => {
  it('seeds 1–4: no two lock holders, one leader, etcd\'s auth errors', async () => {
    const failures: string[] = [];
    for (let seed = 1; seed <= 4; seed++) {
      const r = await runNodeSeed({ seed, coordination: true, ...(seed % 2 === 1 ? { auth: true } : {}) });
      if (!r.ok) failures.push(`seed ${seed}: ${r.error} — replay: npm run sim -- --seeds 0 --node-seeds 0 --lock-seeds 1 --start ${seed} --verbose`);
      expect(r.stats.locks).toBeGreaterThan(0);
      expect(r.stats.wins).toBeGreaterThan(0);
      if (seed % 2 === 1) expect(r.stats.authErrors).toBeGreaterThan(0);
    }
    expect(failures).toEqual([]);
  });

  it('replays exactly with auth on: the same seed gives the same trace', async () => {
    const a: string[] = [];
    const b: string[] = [];
    await runNodeSeed({ seed: 3, coordination: true, auth: true, trace: (l) => a.push(l) });
    await runNodeSeed({ seed: 3, coordination: true, auth: true, trace: (l) => b.push(l) });
    expect(a.some((l) => l.includes('auth setup: auth enable'))).toBe(true);
    expect(b).toEqual(a);
  });
});
