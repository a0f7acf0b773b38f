/**
 * A short fixed set of chaos runs on real 3-member clusters (seven faults, ~15–25 s apiece), every
 * checker over each history, and the L11 self-test: planted faults in a real recorded history are caught.
 * Failing seeds found by `npm run chaos` and not yet fixed stay out of this set (see FINDINGS.md).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { killAll } from '../e2e/harness.js';
import { runOnce, type RunResult } from './run.js';
import { selfTest } from './self-test.js';
import { testFaultsEnv, type TestFault } from '../../src/config/test-faults.js';

const fixed: { seed: number; fault: string }[] = [
  { seed: 11, fault: 'C2-kill-leader' },
  { seed: 12, fault: 'C4-blackhole' },
  { seed: 13, fault: 'C9-pause-leader' },
  { seed: 14, fault: 'C11-replace-member' },
  { seed: 15, fault: 'C14-slow-fsync' },
  { seed: 16, fault: 'C12-learner' },
  { seed: 17, fault: 'C3-snapshot-catchup' },
];

function explain(r: RunResult): string {
  return `seed ${r.seed} ${r.fault} failed (replay: ${r.replay}; saved: ${r.saved}):\n${r.violations.slice(0, 5).join('\n')}`;
}

describe('chaos: fixed faults on real clusters', () => {
  afterAll(async () => {
    await killAll();
  });

  for (const { seed, fault } of fixed) {
    // Each run also proves its own checkers can fail (L11): faults planted in this very history are caught. No
    // test leans on another's state, so any one of them can run alone (vitest -t).
    it(`survives ${fault} (seed ${seed}) with a linearizable history and correct watches, and catches faults planted in it`, async () => {
      const r = await runOnce({ seed, fault, timeoutMs: 100_000 });
      expect(r.violations, explain(r)).toEqual([]);
      expect(r.report!.stats.l1Ops).toBeGreaterThan(100);
      for (const t of selfTest(r.history!, r.finalRev)) {
        expect(t.applied, `${t.name}: nothing to corrupt`).toBe(true);
        expect(t.caught, `${t.name} was not caught`).toBe(true);
      }
    }, 120_000);
  }
});

/**
 * L11 with the server itself broken on purpose (src/config/test-faults.ts, switched on through the
 * environment the members inherit): the checkers must fail these runs, with the right checker.
 */
describe('chaos: the checkers catch a server broken on purpose', () => {
  afterAll(async () => {
    delete process.env[testFaultsEnv];
    await killAll();
  });

  const broken: { fault: TestFault; run: string; checker: RegExp }[] = [
    { fault: 'drop-watch-event', run: 'C9-pause-leader', checker: /^L4 / },
    { fault: 'skip-read-index', run: 'C9-pause-leader', checker: /^L1 / },
  ];
  // A planted bug shows only when the fault's timing lets it (a stale read needs a read to land on the paused
  // leader): each must be caught within attemptsMax seeded runs, the first of which catches it on a quiet machine.
  const attemptsMax = 3;
  for (const b of broken) {
    it(`catches ${b.fault} (${b.run}, within ${attemptsMax} runs from seed 13)`, async () => {
      process.env[testFaultsEnv] = b.fault;
      try {
        const missed: string[] = [];
        for (let seed = 13; seed < 13 + attemptsMax; seed++) {
          const r = await runOnce({ seed, fault: b.run, timeoutMs: 100_000 });
          if (r.violations.some((v) => b.checker.test(v))) return;
          missed.push(`seed ${seed}: ${r.violations.slice(0, 5).join('; ') || 'no violation'}`);
        }
        expect.fail(`no ${b.checker} violation in ${attemptsMax} runs:\n${missed.join('\n')}`);
      } finally {
        delete process.env[testFaultsEnv];
      }
    }, attemptsMax * 120_000);
  }
});
