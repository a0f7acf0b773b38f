/**
 * DriverApp.applyHold: while the application's backend is behind, committed entries wait in the driver's
 * apply queue, in order, while the node still persists and acknowledges appends (issue 22: a slow backend
 * must slow apply down, not grow memory or stop heartbeats).
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../../src/base/prng.js';
import type { Scheduler } from '../../../src/base/scheduler.js';
import { EntryType, MessageType, RawNode } from '../../../src/raft/index.js';
import type { Entry, Message, RaftConfig } from '../../../src/raft/index.js';
import { RaftDriver, type DriverApp } from '../../../src/node/driver/raft-driver.js';
import { settle } from '../../settle.js';

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

/** An append from leader 2 of the entries after `prev`, committing through `commit`. */
function append(prev: number, prevTerm: number, entries: Entry[], commit: number): Message {
  return { type: MessageType.App, from: 2n, to: 1n, term: 2, logTerm: prevTerm, index: prev, entries, commit, reject: false, rejectHint: 0 };
}

describe('RaftDriver applyHold', () => {
  it('holds committed entries in order while the app is behind, and acknowledges appends meanwhile', async () => {
    let release: (() => void) | undefined;
    let holding = false;
    const applied: number[] = [];
    const sent: Message[] = [];
    const app: DriverApp = {
      applyHold: () => (holding ? new Promise<void>((r) => (release = r)) : undefined),
      applyEntries: (entries) => applied.push(...entries.map((e) => e.index)),
      restoreSnapshot: async () => {},
      onSoftState: () => {},
      onReadStates: () => {},
      onStable: () => {},
      onFatal: (error) => {
        throw error;
      },
    };
    const driver = new RaftDriver(follower(), { save: async () => {}, saveSnapshot: async () => {} }, { tickIntervalMs: 100, scheduler });
    driver.start(app, { send: (ms) => sent.push(...ms) });

    driver.step([append(4, 1, [entry(5), entry(6)], 6)]);
    await settle();
    expect(applied).toEqual([5, 6]);

    holding = true;
    driver.step([append(6, 2, [entry(7), entry(8)], 8)]);
    await settle();
    driver.step([append(8, 2, [entry(9)], 9)]);
    await settle();
    expect(applied).toEqual([5, 6]);
    // The log still took the appends and acknowledged them: the leader may commit with this member.
    const acks = sent.filter((m) => m.type === MessageType.AppResp && !m.reject).map((m) => m.index);
    expect(Math.max(...acks)).toBe(9);
    expect(driver.status().commit).toBe(9);

    holding = false;
    release!();
    await settle();
    expect(applied).toEqual([5, 6, 7, 8, 9]);
  });
});
