import { describe, expect, it } from 'vitest';
import { AssertionError } from '../../src/base/assert.js';
import { MemberConfig, decodeConfChange, encodeConfChange } from '../../src/raft/conf.js';
import { Inflights } from '../../src/raft/inflights.js';
import { Progress } from '../../src/raft/progress.js';
import { committedIndex, quorumSize, voteResult } from '../../src/raft/quorum.js';
import { ReadOnlyQueue, roundContext, roundOf } from '../../src/raft/read-only.js';

describe('quorum', () => {
  const cases: { matches: number[]; want: number }[] = [
    { matches: [5], want: 5 },
    { matches: [5, 3], want: 3 },
    { matches: [7, 5, 9], want: 7 },
    { matches: [1, 2, 3, 4], want: 2 },
    { matches: [9, 0, 0, 8, 7], want: 7 },
    { matches: [1, 1, 1, 1, 1, 1, 2], want: 1 },
  ];
  for (const c of cases) {
    it(`commits ${c.want} for matches ${c.matches.join(',')}`, () => {
      const ids = c.matches.map((_, i) => BigInt(i + 1));
      expect(committedIndex(ids, (id) => c.matches[Number(id) - 1]!, [])).toBe(c.want);
    });
  }

  it('sizes majorities', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(quorumSize)).toEqual([1, 2, 2, 3, 3, 4, 4]);
  });

  it('tallies votes: won, lost, pending', () => {
    const v = [1n, 2n, 3n];
    expect(voteResult(v, new Map([[1n, true]]))).toBe('pending');
    expect(voteResult(v, new Map([[1n, true], [2n, true]]))).toBe('won');
    expect(voteResult(v, new Map([[1n, true], [2n, false], [3n, false]]))).toBe('lost');
    expect(voteResult(v, new Map([[4n, true], [1n, true]]))).toBe('pending');
  });
});

describe('inflights', () => {
  it('fills, frees up to an index, and wraps around', () => {
    const f = new Inflights(3);
    f.add(1);
    f.add(3);
    f.add(5);
    expect(f.full()).toBe(true);
    expect(() => f.add(6)).toThrow(AssertionError);
    f.freeLE(3);
    expect(f.count).toBe(1);
    f.add(7);
    f.add(9);
    expect(f.full()).toBe(true);
    f.freeFirstOne();
    expect(f.count).toBe(2);
    f.freeLE(100);
    expect(f.count).toBe(0);
  });

  it('asserts indexes increase', () => {
    const f = new Inflights(4);
    f.add(5);
    expect(() => f.add(5)).toThrow(AssertionError);
  });
});

describe('progress', () => {
  it('probe sends one message then pauses until a response', () => {
    const p = new Progress(10, false, 4);
    expect(p.isPaused()).toBe(false);
    p.sentEntries(2, 11);
    expect(p.isPaused()).toBe(true);
    expect(p.next).toBe(10);
    expect(p.maybeUpdate(11)).toBe(true);
    expect(p.isPaused()).toBe(false);
    expect(p.next).toBe(12);
  });

  it('replicate streams optimistically within the inflight window', () => {
    const p = new Progress(5, false, 2);
    p.match = 4;
    p.becomeReplicate();
    p.sentEntries(1, 5);
    p.sentEntries(3, 8);
    expect(p.next).toBe(9);
    expect(p.isPaused()).toBe(true);
    p.maybeUpdate(5);
    p.inflights.freeLE(5);
    expect(p.isPaused()).toBe(false);
  });

  const decrCases: { name: string; state: 'probe' | 'replicate'; match: number; next: number; rejected: number; hint: number; ok: boolean; wantNext: number }[] = [
    { name: 'replicate: a stale rejection is ignored', state: 'replicate', match: 5, next: 9, rejected: 4, hint: 4, ok: false, wantNext: 9 },
    { name: 'replicate: falls back to match+1', state: 'replicate', match: 5, next: 9, rejected: 8, hint: 2, ok: true, wantNext: 6 },
    { name: 'replicate: resumes from a higher hint', state: 'replicate', match: 5, next: 12, rejected: 11, hint: 8, ok: true, wantNext: 9 },
    { name: 'probe: a rejection not for next-1 is stale', state: 'probe', match: 0, next: 9, rejected: 5, hint: 2, ok: false, wantNext: 9 },
    { name: 'probe: jumps to the hint', state: 'probe', match: 0, next: 9, rejected: 8, hint: 3, ok: true, wantNext: 4 },
    { name: 'probe: never below match+1', state: 'probe', match: 5, next: 9, rejected: 8, hint: 1, ok: true, wantNext: 6 },
  ];
  for (const c of decrCases) {
    it(`maybeDecrTo ${c.name}`, () => {
      const p = new Progress(c.next, false, 4);
      p.match = c.match;
      if (c.state === 'replicate') {
        p.becomeReplicate();
        p.next = c.next;
      }
      expect(p.maybeDecrTo(c.rejected, c.hint)).toBe(c.ok);
      expect(p.next).toBe(c.wantNext);
      if (c.ok) expect(p.state).toBe('probe');
    });
  }

  it('snapshot state pauses until it becomes probe again, resuming after the snapshot', () => {
    const p = new Progress(3, false, 4);
    p.becomeSnapshot(20);
    expect(p.isPaused()).toBe(true);
    p.becomeProbe();
    expect(p.next).toBe(21);
    expect(p.isPaused()).toBe(false);
  });
});

describe('read-only queue', () => {
  const c = (s: string): Uint8Array => new TextEncoder().encode(s);
  it('answers every request up to the acknowledged round, in order', () => {
    const q = new ReadOnlyQueue(10);
    const a = q.add(5, 1n, c('a'))!;
    const b = q.add(6, 2n, c('b'))!;
    expect(q.add(6, 2n, c('b'))).toBeUndefined();
    q.add(7, 1n, c('c'));
    expect(q.recvAck(2n, b.round)?.size).toBe(1);
    expect(q.recvAck(3n, b.round)?.size).toBe(2);
    expect(q.recvAck(3n, 999)).toBeUndefined();
    expect(q.advance(b.round).map((r) => r.index)).toEqual([5, 6]);
    expect(q.size).toBe(1);
    expect(q.lastPendingRound()).toBe(b.round + 1);
    expect(q.recvAck(2n, a.round)).toBeUndefined();
  });

  it('a reused context gets a new round: a late ack of the old round cannot confirm it', () => {
    const q = new ReadOnlyQueue(10);
    const first = q.add(5, 1n, c('same'))!;
    q.advance(first.round);
    const second = q.add(9, 1n, c('same'))!;
    expect(second.round).not.toBe(first.round);
    expect(q.recvAck(2n, first.round)).toBeUndefined();
    expect(q.advance(first.round)).toEqual([]);
    expect(q.size).toBe(1);
  });

  it('drops requests beyond its cap', () => {
    const q = new ReadOnlyQueue(2);
    q.add(1, 1n, c('a'));
    q.add(1, 1n, c('b'));
    expect(q.add(1, 1n, c('c'))).toBeUndefined();
  });

  it('encodes heartbeat rounds as contexts and rejects anything else', () => {
    expect(roundOf(roundContext(123456789))).toBe(123456789);
    expect(roundOf(c('abc'))).toBeUndefined();
    expect(roundOf(undefined)).toBeUndefined();
  });
});

describe('member config and conf change codec', () => {
  it('adds, promotes and removes idempotently, keeping ids sorted', () => {
    const m = new MemberConfig({ voters: [3n, 1n], learners: [] });
    m.apply({ type: 'addLearner', nodeId: 2n, context: new Uint8Array() });
    m.apply({ type: 'addLearner', nodeId: 2n, context: new Uint8Array() });
    expect(m.toConfState()).toEqual({ voters: [1n, 3n], learners: [2n] });
    m.apply({ type: 'addVoter', nodeId: 2n, context: new Uint8Array() });
    expect(m.toConfState()).toEqual({ voters: [1n, 2n, 3n], learners: [] });
    m.apply({ type: 'removeNode', nodeId: 1n, context: new Uint8Array() });
    m.apply({ type: 'removeNode', nodeId: 9n, context: new Uint8Array() });
    expect(m.toConfState()).toEqual({ voters: [2n, 3n], learners: [] });
  });

  it('round-trips conf changes with 64-bit ids and context', () => {
    const cc = { type: 'addLearner' as const, nodeId: 0xfedcba9876543210n, context: new Uint8Array([1, 2, 3]) };
    expect(decodeConfChange(encodeConfChange(cc))).toEqual(cc);
  });
});
