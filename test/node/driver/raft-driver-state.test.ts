/**
 * RaftDriver.softState / hardState: Raft's leader, role, term and commit as the application has been told
 * them, the one copy the server's leadership view reads (nothing mirrored in src/node/leadership/leadership.ts).
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../../src/base/prng.js';
import type { Scheduler } from '../../../src/base/scheduler.js';
import { MessageType, RawNode } from '../../../src/raft/index.js';
import type { HardState, Message, RaftConfig, SoftState } from '../../../src/raft/index.js';
import { RaftDriver, type DriverApp } from '../../../src/node/driver/raft-driver.js';

/** Timers never fire and `soon` work waits for run(): the test decides when the driver drains. */
function heldScheduler(): Scheduler & { run(): void } {
  const queued: (() => void)[] = [];
  const none = { cancel: () => {} };
  return {
    nowMs: () => 0,
    wallMs: () => 0,
    after: () => none,
    every: () => none,
    soon: (fn) => void queued.push(fn),
    run: () => {
      while (queued.length > 0) queued.shift()!();
    },
  };
}

function follower(hardState: HardState): RawNode {
  const cfg: RaftConfig = {
    id: 1n, electionTicks: 10, heartbeatTicks: 1, preVote: false, checkQuorum: false, maxMsgBytes: 1 << 20,
    maxInflightMsgs: 256, maxUncommittedBytes: 1 << 30, rng: new Prng(7),
  };
  const confState = { voters: [1n, 2n, 3n], learners: [] };
  return new RawNode(cfg, { hardState, snapshot: { index: 4, term: 1, confState }, entries: [], applied: 4 });
}

/** A heartbeat-sized append from `leader` at `term` that commits nothing new. */
function append(leader: bigint, term: number): Message {
  return { type: MessageType.App, from: leader, to: 1n, term, logTerm: 1, index: 4, entries: [], commit: 4, reject: false, rejectHint: 0 };
}

type Seen = { state: SoftState; previous: SoftState; driverSoft: SoftState; driverTerm: number };

function driverOf(node: RawNode): { driver: RaftDriver; seen: Seen[] } {
  const seen: Seen[] = [];
  let driver!: RaftDriver;
  const app: DriverApp = {
    applyHold: () => undefined,
    applyEntries: () => {},
    restoreSnapshot: async () => {},
    onSoftState: (state, previous) => seen.push({ state, previous, driverSoft: driver.softState, driverTerm: driver.hardState.term }),
    onReadStates: () => {},
    onStable: () => {},
    onFatal: (error) => {
      throw error;
    },
  };
  const log = { save: async () => {}, saveSnapshot: async () => {} };
  driver = new RaftDriver(node, log, { tickIntervalMs: 100, scheduler: heldScheduler() });
  driver.start(app, { send: () => {} });
  return { driver, seen };
}

describe('RaftDriver soft and hard state', () => {
  it("starts from the restored node's term and commit, which its first Ready does not repeat", () => {
    const { driver } = driverOf(follower({ term: 3, vote: 2n, commit: 4 }));
    expect(driver.hardState).toEqual({ term: 3, vote: 2n, commit: 4 });
    expect(driver.softState).toEqual({ leader: 0n, role: 'follower' });
  });

  it('hands each new soft state to the application with the one before, its own copy already updated', () => {
    const { driver, seen } = driverOf(follower({ term: 1, vote: 0n, commit: 4 }));
    driver.step([append(2n, 2)]);
    driver.step([append(2n, 2)]); // same leader: no new soft state
    driver.step([append(3n, 3)]);
    expect(seen).toEqual([
      { state: { leader: 2n, role: 'follower' }, previous: { leader: 0n, role: 'follower' }, driverSoft: { leader: 2n, role: 'follower' }, driverTerm: 2 },
      { state: { leader: 3n, role: 'follower' }, previous: { leader: 2n, role: 'follower' }, driverSoft: { leader: 3n, role: 'follower' }, driverTerm: 3 },
    ]);
    expect(driver.softState).toEqual({ leader: 3n, role: 'follower' });
    expect(driver.hardState.term).toBe(3);
  });
});
