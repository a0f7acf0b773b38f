/**
 * The flood counters on their own: the reset window's epochs (the worked example of flood-guard.ts) and the
 * idle-frame budget's refunds.
 */
import { describe, expect, it } from 'vitest';
import { IdleFrameBudget, StreamResetWindow } from '../../../src/api/h2frames/flood-guard.js';

describe('StreamResetWindow', () => {
  it('adds up the resets of streams opened in this epoch and the one before (the worked example)', () => {
    const w = new StreamResetWindow(4, 5);
    for (const id of [1, 3, 5, 7]) w.opened(id);
    expect([1, 3, 5].map((id) => w.reset(id))).toEqual([false, false, false]);
    w.opened(9);
    expect([9, 11, 13].map((id) => w.reset(id))).toEqual([false, false, true]);
  });

  it('does not count the reset of a stream opened before both epochs', () => {
    const w = new StreamResetWindow(4, 5);
    for (let id = 1; id <= 17; id += 2) w.opened(id);
    expect([1, 3, 5, 7].map((id) => w.reset(id))).toEqual([false, false, false, false]);
    // 9..15 are the previous epoch, 17 the current one: these count.
    expect([9, 11, 13, 15, 17, 17].map((id) => w.reset(id))).toEqual([false, false, false, false, false, true]);
  });

  it('counts refused streams as opened and reset, whatever their ids', () => {
    const w = new StreamResetWindow(4, 5);
    w.opened(1);
    expect(Array.from({ length: 6 }, () => w.refused())).toEqual([false, false, false, false, false, true]);
  });

  it('forgets resets two epochs old', () => {
    const w = new StreamResetWindow(4, 5);
    let id = 1;
    const cycle = (resets: number): boolean[] => {
      const ids = [0, 1, 2, 3].map(() => ((id += 2), id - 2));
      ids.forEach((i) => w.opened(i));
      return ids.slice(0, resets).map((i) => w.reset(i));
    };
    // 3 of every 4 reset: 6 of 8 over two epochs.
    expect(cycle(2)).toEqual([false, false]);
    expect(cycle(3)).toEqual([false, false, false]);
    expect(cycle(3)).toEqual([false, false, true]);
  });

  it('rejects a window without room', () => {
    expect(() => new StreamResetWindow(0, 5)).toThrow();
    expect(() => new StreamResetWindow(4, 0)).toThrow();
  });
});

describe('IdleFrameBudget', () => {
  it('runs out after framesMax idle frames, and a refund gives some back, never past framesMax', () => {
    const b = new IdleFrameBudget(3, 2);
    b.refund();
    expect([b.spend(), b.spend(), b.spend(), b.spend()]).toEqual([true, true, true, false]);
    b.refund();
    b.refund();
    expect([b.spend(), b.spend()]).toEqual([true, true]);
  });
});
