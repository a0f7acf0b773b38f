/**
 * R6/R7 — the persistence ack of an early Ready must not vouch for entries a later Ready rewrote
 * (etcd-io/raft's async_storage_writes_append_aba_race; raft-rs's first_update_index).
 *
 * One follower, its log ending at 4 (term 1); three leaders in turn send it entries 5–7. Ready 1 writes them
 * at term 2, Ready 2 overwrites them at term 3, Ready 3 rewrites them at term 2 (the term-4 leader holds the
 * term-2 entries). When Ready 1's write is acknowledged, Ready 2's write may already be on disk and Ready 3's
 * may not: the log at 5–7 after a crash could be term 3. The (index, term) of the ack matches the log again
 * (A-B-A), so a check of (index, term) alone marks 7 durable and hands 5–7 to the state machine too early.
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { RawNode, EntryType, MessageType } from '../../src/raft/index.js';
import type { Entry, Message, RaftConfig, Ready } from '../../src/raft/index.js';

const entries = (from: number, to: number, term: number): Entry[] => {
  const out: Entry[] = [];
  for (let index = from; index <= to; index++) out.push({ index, term, type: EntryType.Normal, data: new Uint8Array([term]) });
  return out;
};

/** MsgApp from leader `from` of `term`; the entry before `ents` has term `logTerm`. */
function app(from: bigint, term: number, ents: Entry[], commit: number, logTerm = 1): Message {
  const index = ents[0]!.index - 1;
  return { type: MessageType.App, from, to: 1n, term, logTerm, index, entries: ents, commit, reject: false, rejectHint: 0 };
}

function follower(): RawNode {
  const cfg: RaftConfig = {
    id: 1n,
    electionTicks: 10,
    heartbeatTicks: 1,
    preVote: false,
    checkQuorum: false,
    maxMsgBytes: 1 << 20,
    maxInflightMsgs: 256,
    maxUncommittedBytes: 1 << 30,
    rng: new Prng(14),
  };
  const confState = { voters: [1n, 2n, 3n], learners: [] };
  return new RawNode(cfg, {
    hardState: { term: 1, vote: 0n, commit: 4 },
    snapshot: { index: 4, term: 1, confState },
    entries: [],
    applied: 4,
  });
}

const shape = (rd: Ready): string[] => rd.entries.map((e) => `${e.index}@${e.term}`);
const applied = (rd: Ready): string[] => rd.committedEntries.map((e) => `${e.index}@${e.term}`);

describe('persistence acks across rewrites of the same indexes', () => {
  it("Ready 1's ack does not make entries durable that Ready 2 overwrote and Ready 3 rewrote (A-B-A)", () => {
    const n = follower();
    n.step(app(2n, 2, entries(5, 7, 2), 4));
    const rd1 = n.ready();
    expect(shape(rd1)).toEqual(['5@2', '6@2', '7@2']);
    n.step(app(3n, 3, entries(5, 7, 3), 4));
    const rd2 = n.ready();
    expect(shape(rd2)).toEqual(['5@3', '6@3', '7@3']);
    n.step(app(2n, 4, entries(5, 7, 2), 7));
    const rd3 = n.ready();
    expect(shape(rd3)).toEqual(['5@2', '6@2', '7@2']);
    expect(applied(rd3)).toEqual([]);

    n.onPersisted(rd1.persistedUpTo);
    expect(applied(n.ready())).toEqual([]);
    n.onPersisted(rd2.persistedUpTo);
    expect(applied(n.ready())).toEqual([]);
    n.onPersisted(rd3.persistedUpTo);
    expect(applied(n.ready())).toEqual(['5@2', '6@2', '7@2']);
  });

  it('an ack still counts for the entries below the lowest index a later Ready rewrote', () => {
    const n = follower();
    n.step(app(2n, 2, entries(5, 7, 2), 4));
    const rd1 = n.ready();
    // The term-3 leader holds 5 and 6 of term 2 and replaces 7; it commits 6.
    n.step(app(3n, 3, entries(7, 7, 3), 6, 2));
    const rd2 = n.ready();
    expect(shape(rd2)).toEqual(['7@3']);
    n.onPersisted(rd1.persistedUpTo);
    expect(applied(n.ready())).toEqual(['5@2', '6@2']);
    n.step(app(3n, 3, entries(8, 8, 3), 8, 3));
    const rd3 = n.ready();
    n.onPersisted(rd2.persistedUpTo);
    expect(applied(n.ready())).toEqual(['7@3']);
    n.onPersisted(rd3.persistedUpTo);
    expect(applied(n.ready())).toEqual(['8@3']);
  });
});
