/**
 * The simulator proves it can fail: each test-only fault of the core (RaftConfig.unsafeTestFaults) is caught
 *  - by the random scenarios within a stated number of seeds, in two separate windows of seeds, and
 *  - by a scripted story that leads straight to the violation it causes, with the checker that should see it.
 */
import { describe, expect, it } from 'vitest';
import { MessageType, type RaftConfig } from '../../src/raft/types.js';
import { figure8 } from './figure-8.js';
import { runSeed } from './run-seed.js';
import { calmCluster, commit, electionTicks, makeLeader } from './story.js';

type Fault = keyof NonNullable<RaftConfig['unsafeTestFaults']>;

/**
 * Seeds within which each fault must be caught. Measured over windows starting at 1, 1001, 2001, 3001, 4001:
 * voteBeforePersist 1 seed each, commitEarlierTermByCount 1–2, learnersVote 1–9.
 */
const caughtWithinSeeds = 20;

function firstCaught(fault: Fault, start: number): { seed: number; error: string } | undefined {
  for (let seed = start; seed < start + caughtWithinSeeds; seed++) {
    const r = runSeed({ seed, faults: { [fault]: true } });
    // A liveness failure does not count: the fault must be caught as a safety violation.
    if (!r.ok && !r.error!.includes('liveness')) return { seed, error: r.error! };
  }
  return undefined;
}

describe('random scenarios catch every unsafe test fault', () => {
  const cases: [Fault, RegExp][] = [
    ['voteBeforePersist', /vote before persist|election safety/],
    ['commitEarlierTermByCount', /figure 8|leader completeness|state-machine safety/],
    ['learnersVote', /learner \d+ (campaigned|granted)/],
  ];
  for (const [fault, expected] of cases) {
    for (const start of [1, 1001]) {
      it(`${fault} is caught within ≤ ${caughtWithinSeeds} seeds from seed ${start}`, () => {
        const caught = firstCaught(fault, start);
        expect(caught, `${fault} not caught in seeds ${start}..${start + caughtWithinSeeds - 1}`).toBeDefined();
        expect(caught!.error).toMatch(expected);
      });
    }
  }

  it('the same seeds pass without the faults (the catches are the faults, not the harness)', () => {
    for (let seed = 1; seed <= 5; seed++) {
      const r = runSeed({ seed });
      expect(r.ok, `seed ${seed}: ${r.error}`).toBe(true);
    }
  });
});

describe('scripted stories lead each fault to the violation it causes', () => {
  /**
   * R6/R7, crash right after voting: n1 campaigns in term 2 and can reach only n2; n2 grants and crashes at
   * once; n2 restarts. n3, which never heard of n1's candidacy, campaigns in term 2 and asks n2. A correct core
   * sent the grant only once it was durable, so n2 refuses; with voteBeforePersist n2 forgot and grants, and two
   * nodes lead term 2. Checked by election safety alone (the send-durability checks are off).
   */
  function crashAfterVote(faults?: RaftConfig['unsafeTestFaults']): ReturnType<typeof calmCluster> {
    const c = calmCluster(3, {
      checks: { sendDurability: false, leaderTermDurability: false },
      disk: { syncMinSteps: 5, syncMaxSteps: 5, slowRate: 0, slowMinSteps: 0, slowMaxSteps: 0 },
      ...(faults ? { raft: { unsafeTestFaults: faults } } : {}),
    });
    c.net.cutBoth(1n, 3n);
    c.pauseTicks(2, true);
    c.pauseTicks(3, true);
    let crashed = false;
    c.onSend = (m) => {
      if (crashed || m.type !== MessageType.VoteResp || m.reject || m.from !== 2n) return;
      crashed = true;
      c.at(c.nowStep, () => {
        c.crash(2);
        c.net.isolate(1n, c.ids());
        c.at(c.nowStep + c.stepsPerTick, () => c.restart(2));
      });
    };
    expect(c.runEventsUntil(() => crashed, 4 * electionTicks)).toBe(true);
    c.runTicks(2);
    c.pauseTicks(1, true);
    c.pauseTicks(3, false);
    c.runTicks(6 * electionTicks);
    return c;
  }

  it('crash right after voting: a correct core keeps the vote; n3 can only win a later term', () => {
    const c = crashAfterVote();
    expect(c.checker.leaderOfTerm(2)).toBe(1n);
    expect(c.node(3).role).toBe('leader');
    expect(c.node(3).hs.term).toBeGreaterThan(2);
  });

  it('crash right after voting with voteBeforePersist: two leaders of term 2 (election safety)', () => {
    expect(() => crashAfterVote({ voteBeforePersist: true })).toThrow(/election safety: \d and \d both leader in term 2/);
  });

  it('figure 8 with commitEarlierTermByCount: the early commit is caught', () => {
    expect(() => figure8({ commitEarlierTermByCount: true })).toThrow(/figure 8/);
  });

  /** A learner cut off for three election timeouts: a correct one waits; with learnersVote it campaigns. */
  function isolatedLearner(faults?: RaftConfig['unsafeTestFaults']): ReturnType<typeof calmCluster> {
    const c = calmCluster(3, faults ? { raft: { unsafeTestFaults: faults } } : {});
    makeLeader(c, 1);
    expect(c.proposeConfChange(1, { type: 'addLearner', nodeId: 4n }).ok).toBe(true);
    c.addNode(4);
    commit(c);
    c.net.isolate(4n, c.ids());
    c.runTicks(3 * electionTicks);
    return c;
  }

  it('an isolated learner never campaigns', () => {
    const c = isolatedLearner();
    expect(c.node(4).role).toBe('follower');
    expect(c.node(1).role).toBe('leader');
  });

  it('an isolated learner with learnersVote campaigns and is caught', () => {
    expect(() => isolatedLearner({ learnersVote: true })).toThrow(/learner 4 campaigned/);
  });
});
