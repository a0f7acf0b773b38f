import { describe, expect, it } from 'vitest';
import { AssertionError } from '../../src/base/assert.js';
import { RaftLog } from '../../src/raft/raft-log.js';
import { EntryType } from '../../src/raft/types.js';
import type { Entry, PersistAck, Snapshot } from '../../src/raft/types.js';

const e = (index: number, term: number, data = ''): Entry => ({
  index,
  term,
  type: EntryType.Normal,
  data: new TextEncoder().encode(data),
});
const ents = (...terms: number[]): Entry[] => terms.map((t, i) => e(i + 1, t));
const noConf = { voters: [], learners: [] };
const fresh = (entries: Entry[], commit = 0): RaftLog =>
  new RaftLog({ index: 0, term: 0, confState: noConf }, entries, commit, 0);
/** Ready `readySeq` is durable, the log up to (index, term) included. */
const ack = (index: number, term: number, readySeq: number): PersistAck => ({ index, term, readySeq });
const snap = (index: number, term: number): Snapshot => ({
  meta: { index, term, confState: noConf },
  data: new Uint8Array(0),
});

describe('RaftLog', () => {
  it('looks up terms inside, before and after the log', () => {
    const log = fresh(ents(1, 1, 2));
    expect([0, 1, 2, 3, 4].map((i) => log.term(i))).toEqual([0, 1, 1, 2, undefined]);
    expect(log.lastIndex).toBe(3);
    expect(log.lastTerm).toBe(2);
  });

  const appendCases: {
    name: string;
    prev: [number, number];
    commit: number;
    incoming: Entry[];
    result: number;
    terms: number[];
    committed: number;
  }[] = [
    { name: 'rejects a mismatched previous term', prev: [3, 3], commit: 3, incoming: [e(4, 3)], result: -1, terms: [1, 1, 2], committed: 0 },
    { name: 'rejects a previous index beyond the end', prev: [4, 2], commit: 3, incoming: [], result: -1, terms: [1, 1, 2], committed: 0 },
    { name: 'appends new entries and commits up to the last new one', prev: [3, 2], commit: 9, incoming: [e(4, 2), e(5, 3)], result: 5, terms: [1, 1, 2, 2, 3], committed: 5 },
    { name: 'skips entries it already has', prev: [1, 1], commit: 2, incoming: [e(2, 1), e(3, 2)], result: 3, terms: [1, 1, 2], committed: 2 },
    { name: 'truncates a conflicting suffix', prev: [1, 1], commit: 1, incoming: [e(2, 3)], result: 2, terms: [1, 3], committed: 1 },
    { name: 'keeps a longer matching suffix on a short heartbeat-like append', prev: [2, 1], commit: 1, incoming: [], result: 2, terms: [1, 1, 2], committed: 1 },
  ];
  for (const c of appendCases) {
    it(`maybeAppend ${c.name}`, () => {
      const log = fresh(ents(1, 1, 2));
      expect(log.maybeAppend(c.prev[0], c.prev[1], c.commit, c.incoming)).toBe(c.result);
      const terms: number[] = [];
      for (let i = 1; i <= log.lastIndex; i++) terms.push(log.term(i)!);
      expect(terms).toEqual(c.terms);
      expect(log.committed).toBe(c.committed);
    });
  }

  it('refuses (asserts) to truncate at or below the commit index', () => {
    const log = fresh(ents(1, 1, 2), 2);
    expect(() => log.maybeAppend(1, 1, 2, [e(2, 5)])).toThrow(AssertionError);
  });

  it('asserts commit never passes the last index', () => {
    const log = fresh(ents(1, 1));
    expect(() => log.commitTo(3)).toThrow(AssertionError);
    expect(log.commitTo(2)).toBe(true);
    expect(log.commitTo(1)).toBe(false);
  });

  it('lowers handedOut and stable when truncating an unpersisted suffix', () => {
    const log = fresh(ents(1, 1, 1, 1));
    expect(log.stable).toBe(4);
    log.maybeAppend(2, 1, 0, [e(3, 2)]);
    expect(log.stable).toBe(2);
    expect(log.handedOut).toBe(2);
    expect(log.takeUnhanded(1).map((x) => x.index)).toEqual([3]);
  });

  it('counts a persistence ack only below a suffix overwritten after its Ready', () => {
    const log = fresh([]);
    log.maybeAppend(0, 0, 0, ents(1, 1, 1));
    log.takeUnhanded(1);
    log.maybeAppend(1, 1, 0, [e(2, 2)]);
    expect(log.stableTo(ack(3, 1, 1))).toBe(true);
    expect(log.stable).toBe(1);
    log.takeUnhanded(2);
    expect(log.stableTo(ack(2, 2, 2))).toBe(true);
    expect(log.stable).toBe(2);
  });

  it('ignores an early ack once a later Ready rewrote from below it, and counts the later ack in full', () => {
    const log = fresh(ents(1), 1);
    log.maybeAppend(1, 1, 1, [e(2, 2), e(3, 2)]);
    log.takeUnhanded(1);
    log.maybeAppend(1, 1, 1, [e(2, 3)]);
    log.takeUnhanded(2);
    log.maybeAppend(1, 1, 1, [e(2, 2), e(3, 2)]);
    log.takeUnhanded(3);
    expect(log.stableTo(ack(3, 2, 1))).toBe(false);
    expect(log.stableTo(ack(2, 3, 2))).toBe(false);
    expect(log.stable).toBe(1);
    expect(log.stableTo(ack(3, 2, 3))).toBe(true);
    expect(log.stable).toBe(3);
  });

  it('a restored snapshot voids every ack of a Ready before the one that carries it', () => {
    const log = fresh([]);
    log.maybeAppend(0, 0, 0, ents(1, 1));
    log.takeUnhanded(1);
    log.restore(snap(2, 1));
    log.takeUnhanded(2);
    expect(log.stableTo(ack(2, 1, 1))).toBe(false);
    expect(log.stable).toBe(0);
    expect(log.stableTo(ack(2, 1, 2))).toBe(true);
  });

  it('hands out committed entries only when durable, once, in order, bounded in bytes', () => {
    const log = fresh([]);
    const big = 'x'.repeat(100);
    log.maybeAppend(0, 0, 3, [e(1, 1, big), e(2, 1, big), e(3, 1, big)]);
    expect(log.takeCommitted(1 << 20)).toEqual([]);
    log.takeUnhanded(1);
    log.stableTo(ack(2, 1, 1));
    expect(log.takeCommitted(150).map((x) => x.index)).toEqual([1]);
    expect(log.takeCommitted(150).map((x) => x.index)).toEqual([2]);
    expect(log.takeCommitted(150)).toEqual([]);
    log.stableTo(ack(3, 1, 1));
    expect(log.takeCommitted(1 << 20).map((x) => x.index)).toEqual([3]);
  });

  it('slices at most maxBytes per message but always one entry', () => {
    const log = fresh([e(1, 1, 'a'.repeat(50)), e(2, 1, 'b'.repeat(50)), e(3, 1, 'c')]);
    expect(log.slice(1, 10)!.map((x) => x.index)).toEqual([1]);
    expect(log.slice(1, 140)!.map((x) => x.index)).toEqual([1, 2]);
    expect(log.slice(4, 10)).toEqual([]);
  });

  const conflictCases: { index: number; term: number; want: [number, number] }[] = [
    { index: 6, term: 2, want: [4, 2] },
    { index: 6, term: 5, want: [6, 3] },
    { index: 6, term: 1, want: [2, 1] },
    { index: 6, term: 0, want: [0, 0] },
    { index: 9, term: 3, want: [6, 3] },
  ];
  for (const c of conflictCases) {
    it(`findConflictByTerm(${c.index}, ${c.term}) skips whole terms`, () => {
      const log = fresh(ents(1, 1, 2, 2, 3, 3));
      const h = log.findConflictByTerm(c.index, c.term);
      expect([h.index, h.term]).toEqual(c.want);
    });
  }

  it('compacts behind a snapshot, keeping entries for slow followers', () => {
    const log = fresh(ents(1, 1, 2, 2, 3, 3), 6);
    log.stableTo(ack(6, 3, 1));
    log.takeCommitted(1 << 20);
    log.appliedTo(6);
    log.compact(snap(5, 3), 2);
    expect(log.firstIndex).toBe(4);
    expect(log.term(3)).toBe(2);
    expect(log.term(2)).toBeUndefined();
    expect(log.slice(3, 1 << 20)).toBeUndefined();
    expect(log.snapshot?.meta.index).toBe(5);
    expect(() => log.compact(snap(6, 2), 0)).toThrow(AssertionError);
  });

  it('restores from a snapshot: entries after it only, committed at its index', () => {
    const log = fresh(ents(1, 1, 1), 1);
    log.restore(snap(10, 4));
    expect(log.firstIndex).toBe(11);
    expect(log.lastIndex).toBe(10);
    expect(log.term(10)).toBe(4);
    expect(log.committed).toBe(10);
    expect(log.pendingSnapshot?.meta.index).toBe(10);
    expect(log.stable).toBeLessThan(10);
    log.takeUnhanded(1);
    expect(log.stableTo(ack(10, 4, 1))).toBe(true);
    expect(log.maybeAppend(10, 4, 11, [e(11, 4)])).toBe(11);
  });

  it('boots with commit raised to what the application already applied', () => {
    const log = new RaftLog({ index: 0, term: 0, confState: noConf }, ents(1, 1, 2), 1, 2);
    expect(log.committed).toBe(2);
    expect(log.applied).toBe(2);
    expect(() => new RaftLog({ index: 0, term: 0, confState: noConf }, ents(1), 0, 2)).toThrow(AssertionError);
  });

  it('isUpToDate compares last term, then last index', () => {
    const log = fresh(ents(1, 2, 2));
    expect(log.isUpToDate(3, 2)).toBe(true);
    expect(log.isUpToDate(2, 2)).toBe(false);
    expect(log.isUpToDate(1, 3)).toBe(true);
    expect(log.isUpToDate(9, 1)).toBe(false);
  });
});
