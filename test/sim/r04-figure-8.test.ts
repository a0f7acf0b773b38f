/** R4 — figure 8: the story is told in test/sim/figure-8.ts. */
import { describe, expect, it } from 'vitest';
import { figure8 } from './figure-8.js';

describe('R4: figure 8', () => {
  it('a new leader does not commit an earlier-term entry on a majority; a later leader may overwrite it', () => {
    const { c, i, commitAtAck } = figure8();
    expect(commitAtAck).toBeLessThan(i);
    expect(c.node(3).log.term(i)).toBe(c.node(5).log.term(i));
    expect(c.node(3).log.term(i)).not.toBe(c.node(2).log.term(i));
    expect(c.node(3).sm.appliedIndex).toBeGreaterThanOrEqual(i);
  });

  it('with the commitEarlierTermByCount fault, the checker catches the early commit', () => {
    expect(() => figure8({ commitEarlierTermByCount: true })).toThrow(/figure 8/);
  });
});
