import { describe, expect, it } from 'vitest';
import { MessageType } from '../../src/raft/index.js';
import type { ConfChange, Message } from '../../src/raft/index.js';
import { Pump, enc } from './pump.js';

const cut =
  (...ids: bigint[]) =>
  (m: Message): boolean =>
    ids.includes(m.from) || ids.includes(m.to);
const cc = (type: ConfChange['type'], nodeId: bigint): ConfChange => ({ type, nodeId, context: new Uint8Array(0) });

describe('restart from durable state', () => {
  it('replays applied conf changes itself and hands out only entries after applied', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    expect(p.node(1n).proposeConfChange(cc('addLearner', 4n)).ok).toBe(true);
    p.stabilize();
    p.node(1n).propose(enc('a'));
    p.stabilize();
    const appliedBefore = p.applied.get(2n)!.length;
    const node = p.restart(2n, appliedBefore);
    expect(node.status().confState).toEqual({ voters: [1n, 2n, 3n], learners: [4n] });
    expect(node.status().applied).toBe(appliedBefore);
    p.node(1n).propose(enc('b'));
    p.stabilize();
    p.tickAll(2);
    expect(p.appliedData(2n)).toEqual(['a', 'b']);
    expect(p.applied.get(2n)!.map((e) => e.index)).toEqual(Array.from({ length: appliedBefore + 1 }, (_, i) => i + 1));
  });

  it('a restarted node re-applies committed entries after its applied index, conf changes included', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    expect(p.node(1n).proposeConfChange(cc('addLearner', 4n)).ok).toBe(true);
    p.stabilize();
    const node = p.restart(3n, 3);
    expect(node.status().confState.learners).toEqual([]);
    p.stabilize();
    expect(node.status().confState.learners).toEqual([4n]);
  });

  it('does not vote twice in a term across a restart', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.stabilize();
    p.drop = cut(3n);
    p.elect(1n);
    const term = p.node(1n).status().term;
    expect(p.node(2n).status().vote).toBe(1n);
    p.restart(2n, 0);
    expect(p.node(2n).status().term).toBe(term);
    expect(p.node(2n).status().vote).toBe(1n);
    // Node 3 campaigns in the same term (its own term is behind); node 2 must refuse.
    p.drop = cut(1n);
    const before = p.sent.length;
    p.node(3n).tick();
    for (let i = 0; i < 30 && p.node(3n).status().term < term; i++) p.node(3n).tick();
    p.stabilize();
    const grants = p.sent
      .slice(before)
      .filter((m) => m.from === 2n && m.type === MessageType.VoteResp && !m.reject && m.term === term);
    expect(grants).toHaveLength(0);
  });

  it('an unpersisted vote is lost in a crash, and so is the grant (it never left)', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.stabilize();
    p.holdPersist.add(2n);
    p.drop = cut(3n);
    p.elect(1n);
    expect(p.sent.some((m) => m.from === 2n && m.type === MessageType.VoteResp)).toBe(false);
    p.holdPersist.delete(2n);
    const node = p.restart(2n, 0);
    expect(node.status().vote).toBe(0n);
    expect(p.node(1n).status().role).toBe('candidate');
  });
});
