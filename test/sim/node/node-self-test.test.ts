/**
 * The production-node simulator proves it can fail (L11 in test/GLOSSARY.md): each planted server bug of
 * src/config/test-faults.ts is caught by the random seeds within caughtWithinSeeds, in two separate windows,
 * by the check that should see it — and the same seeds pass without the bug.
 */
import { describe, expect, it } from 'vitest';
import type { TestFault } from '../../../src/config/test-faults.js';
import { runNodeSeed } from './run-node-seed.js';

/**
 * Measured over windows starting at 1 and 1001: skip-read-index is caught at the first or second seed,
 * drop-watch-event at the first, ack-before-persist at the first or second.
 */
const caughtWithinSeeds = 6;

async function firstCaught(fault: TestFault, start: number): Promise<{ seed: number; error: string } | undefined> {
  for (let seed = start; seed < start + caughtWithinSeeds; seed++) {
    const r = await runNodeSeed({ seed, faults: new Set([fault]) });
    if (!r.ok) return { seed, error: r.error! };
  }
  return undefined;
}

describe('the production-node seeds catch every planted server bug', () => {
  const cases: [TestFault, RegExp][] = [
    // A read served from local state without ReadIndex: stale (a linearizability or header-revision violation).
    ['skip-read-index', /L1 key \w+ is not linearizable|L5 client \d+'s header revision went back/],
    // One event lost on a stream: the watch's reliability check sees the gap.
    ['drop-watch-event', /L4 watch \d+ .*missed (put|delete)/],
    // Acks before the log has the entries: a crash loses acknowledged entries, which the member's own
    // recovery refuses (the backend applied more than the log holds), or Raft's commit ≤ last index asserts,
    // or a client sees the lost write (linearizability).
    ['ack-before-persist', /committed entries are missing|commit \d+ beyond last index|is not linearizable/],
  ];
  for (const [fault, expected] of cases) {
    for (const start of [1, 1001]) {
      it(`${fault} is caught within ≤ ${caughtWithinSeeds} seeds from seed ${start}`, async () => {
        const caught = await firstCaught(fault, start);
        expect(caught, `${fault} not caught in seeds ${start}..${start + caughtWithinSeeds - 1}`).toBeDefined();
        expect(caught!.error).toMatch(expected);
      });
    }
  }

  it('the same seeds pass without the bugs (the catches are the bugs, not the harness)', async () => {
    for (const start of [1, 1001]) {
      for (let seed = start; seed < start + 3; seed++) {
        const r = await runNodeSeed({ seed });
        expect(r.ok, `seed ${seed}: ${r.error}`).toBe(true);
      }
    }
  });
});
