import { describe, expect, it } from 'vitest';
import { Pump, enc } from './pump.js';

describe('election and replication', () => {
  it('elects a leader in a 3-node cluster and replicates a proposal to all', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.stabilize();
    p.elect(1n);
    expect(p.leaders()).toEqual([1n]);
    expect(p.node(2n).status().leader).toBe(1n);
    expect(p.node(1n).propose(enc('a')).ok).toBe(true);
    p.stabilize();
    for (const id of [1n, 2n, 3n]) expect(p.appliedData(id)).toEqual(['a']);
  });
});
