/**
 * A throw in the driver's promise continuations (an assertion in apply, in the core, in the application's
 * onStable) reaches DriverApp.onFatal, the member's stop sequence, instead of becoming an unhandled rejection
 * (issue 31, item 2).
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../../src/base/prng.js';
import type { Scheduler } from '../../../src/base/scheduler.js';
import { EntryType, MessageType, RawNode } from '../../../src/raft/index.js';
import type { Entry, Message, RaftConfig } from '../../../src/raft/index.js';
import { RaftDriver, type DriverApp } from '../../../src/node/driver/raft-driver.js';

const none = { cancel: () => {} };
const scheduler: Scheduler = { nowMs: () => 0, wallMs: () => 0, after: () => none, every: () => none, soon: (fn) => queueMicrotask(fn) };

function follower(): RawNode {
  const cfg: RaftConfig = {
    id: 1n, electionTicks: 10, heartbeatTicks: 1, preVote: false, checkQuorum: false, maxMsgBytes: 1 << 20,
    maxInflightMsgs: 256, maxUncommittedBytes: 1 << 30, rng: new Prng(7),
  };
  const confState = { voters: [1n, 2n, 3n], learners: [] };
  return new RawNode(cfg, { hardState: { term: 2, vote: 2n, commit: 4 }, snapshot: { index: 4, term: 1, confState }, entries: [], applied: 4 });
}

const entry = (index: number): Entry => ({ index, term: 2, type: EntryType.Normal, data: new Uint8Array([index]) });
const append = (entries: Entry[], commit: number): Message =>
  ({ type: MessageType.App, from: 2n, to: 1n, term: 2, logTerm: 1, index: 4, entries, commit, reject: false, rejectHint: 0 });

/** A driver over `app`'s overrides; resolves `fatal` with what reached onFatal. */
function driverWith(overrides: Partial<DriverApp>): { driver: RaftDriver; fatal: Promise<unknown> } {
  let reportFatal!: (error: unknown) => void;
  const fatal = new Promise<unknown>((resolve) => (reportFatal = resolve));
  const app: DriverApp = {
    applyHold: () => undefined,
    applyEntries: () => {},
    restoreSnapshot: async () => {},
    onSoftState: () => {},
    onReadStates: () => {},
    onStable: () => {},
    onFatal: (error) => reportFatal(error),
    ...overrides,
  };
  const driver = new RaftDriver(follower(), { save: async () => {}, saveSnapshot: async () => {} }, { tickIntervalMs: 100, scheduler });
  driver.start(app, { send: () => {} });
  return { driver, fatal };
}

describe('RaftDriver failures after a save', () => {
  it('a throw in the work after a save (onStable) reaches onFatal', async () => {
    const { driver, fatal } = driverWith({
      onStable: (index) => {
        if (index >= 5) throw new Error('assertion failed: stable index');
      },
    });
    driver.step([append([entry(5)], 4)]);
    expect(String(await fatal)).toContain('assertion failed: stable index');
  }, 2000);

  it('a throw while applying after an apply hold reaches onFatal', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    let held = true;
    const { driver, fatal } = driverWith({
      applyHold: () => (held ? hold : undefined),
      applyEntries: () => {
        throw new Error('assertion failed: apply');
      },
    });
    driver.step([append([entry(5)], 5)]);
    held = false;
    release();
    expect(String(await fatal)).toContain('assertion failed: apply');
  }, 2000);
});
