/**
 * R8 — split votes resolve in bounded rounds. Fresh clusters of 2–7 voters, with and without PreVote, on a
 * network whose delays reach a fifth of an election timeout, so simultaneous candidacies are common: the
 * randomized election timeouts must still produce a leader within a bound. Measured over 1,800 clusters per
 * mode: median 14–16 ticks, p99 42, worst 63 (PreVote) and 86 (without). The bound, 12 election timeouts,
 * leaves room, yet fails loudly if timeouts stop being randomized (every round would split).
 */
import { describe, expect, it } from 'vitest';
import { Cluster } from './cluster.js';
import { electionTicks } from './story.js';

const boundTicks = 12 * electionTicks;

function ticksToFirstLeader(seed: number, voters: number, preVote: boolean): number {
  const c = new Cluster({
    seed,
    voters,
    raft: { electionTicks, heartbeatTicks: 1, preVote, checkQuorum: true },
    link: { dropRate: 0, dupRate: 0, delaySteps: 1, jitterSteps: 20 },
  });
  return c.runUntil(() => c.leader() !== undefined, boundTicks) ?? Infinity;
}

describe('R8: split votes', () => {
  for (const preVote of [true, false]) {
    it(`${preVote ? 'with' : 'without'} PreVote: 2–7 voters elect a leader within ${boundTicks} ticks`, () => {
      const took: number[] = [];
      for (let voters = 2; voters <= 7; voters++) {
        for (let seed = 1; seed <= 40; seed++) {
          const t = ticksToFirstLeader(seed * 31 + voters, voters, preVote);
          expect(t, `seed ${seed * 31 + voters}, ${voters} voters`).toBeLessThanOrEqual(boundTicks);
          took.push(t);
        }
      }
      // Some elections did split (took more than one timeout), so the bound was exercised.
      expect(Math.max(...took)).toBeGreaterThan(2 * electionTicks);
    });
  }
});
