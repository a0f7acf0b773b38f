/**
 * RaftConfig.applyUnstable: committed entries are handed out for applying before they are durable locally
 * (a quorum holds them durably); RawNode.stableIndex says how far the application may persist applied state.
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { RawNode, EntryType, MessageType } from '../../src/raft/index.js';
import type { Entry, Message, RaftConfig, Ready } from '../../src/raft/index.js';

const entries = (from: number, to: number, term: number): Entry[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ index: from + i, term, type: EntryType.Normal, data: new Uint8Array([i]) }));

function app(ents: Entry[], commit: number): Message {
  return { type: MessageType.App, from: 2n, to: 1n, term: 2, logTerm: 1, index: ents[0]!.index - 1, entries: ents, commit, reject: false, rejectHint: 0 };
}

function follower(applyUnstable: boolean): RawNode {
  const cfg: RaftConfig = {
    id: 1n, electionTicks: 10, heartbeatTicks: 1, preVote: false, checkQuorum: false, maxMsgBytes: 1 << 20,
    maxInflightMsgs: 256, maxUncommittedBytes: 1 << 30, rng: new Prng(7), applyUnstable,
  };
  const confState = { voters: [1n, 2n, 3n], learners: [] };
  return new RawNode(cfg, { hardState: { term: 1, vote: 0n, commit: 4 }, snapshot: { index: 4, term: 1, confState }, entries: [], applied: 4 });
}

const applied = (rd: Ready): number[] => rd.committedEntries.map((e) => e.index);

describe('applyUnstable', () => {
  it('a follower applies what the leader committed while its own copy is still being written', () => {
    const n = follower(true);
    n.step(app(entries(5, 8, 2), 7));
    const rd = n.ready();
    expect(rd.entries.map((e) => e.index)).toEqual([5, 6, 7, 8]);
    expect(applied(rd)).toEqual([5, 6, 7]);
    expect(n.stableIndex).toBe(4);
    n.onApplied(7);
    n.onPersisted(rd.persistedUpTo);
    expect(n.stableIndex).toBe(8);
  });

  it('without it the same entries wait for the acknowledgement', () => {
    const n = follower(false);
    n.step(app(entries(5, 8, 2), 7));
    const rd = n.ready();
    expect(applied(rd)).toEqual([]);
    n.onPersisted(rd.persistedUpTo);
    expect(applied(n.ready())).toEqual([5, 6, 7]);
  });

  it('compaction at an applied index above stable keeps the entries a later ack names', () => {
    const n = follower(true);
    n.step(app(entries(5, 6, 2), 4));
    const rd1 = n.ready();
    n.step({ ...app(entries(7, 8, 2), 8), logTerm: 2 });
    const rd2 = n.ready();
    expect([...applied(rd1), ...applied(rd2)]).toEqual([5, 6, 7, 8]);
    n.onApplied(8);
    const confState = { voters: [1n, 2n, 3n], learners: [] };
    n.compact({ meta: { index: 8, term: 2, confState }, data: new Uint8Array(0) }, 0);
    n.onPersisted(rd1.persistedUpTo); // names 6: released, its term would be unknown
    expect(n.stableIndex).toBe(6);
    n.onPersisted(rd2.persistedUpTo);
    expect(n.stableIndex).toBe(8);
    expect(n.status().applied).toBe(8);
  });

  it('is a boolean or absent', () => {
    const cfg = { id: 1n, electionTicks: 10, heartbeatTicks: 1, preVote: false, checkQuorum: false, maxMsgBytes: 1, maxInflightMsgs: 1, maxUncommittedBytes: 1, rng: new Prng(1) };
    const boot = { hardState: { term: 0, vote: 0n, commit: 0 }, snapshot: { index: 0, term: 0, confState: { voters: [], learners: [] } }, entries: [], applied: 0 };
    expect(() => new RawNode({ ...cfg, applyUnstable: 'yes' as unknown as boolean }, boot)).toThrow(/applyUnstable/);
  });
});
