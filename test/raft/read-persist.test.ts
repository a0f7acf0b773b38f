import { describe, expect, it } from 'vitest';
import { MessageType } from '../../src/raft/index.js';
import type { Message } from '../../src/raft/index.js';
import { Pump, enc } from './pump.js';

const cut =
  (...ids: bigint[]) =>
  (m: Message): boolean =>
    ids.includes(m.from) || ids.includes(m.to);

describe('ReadIndex', () => {
  it('the leader answers after a heartbeat quorum, at its commit index', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.node(1n).propose(enc('a'));
    p.stabilize();
    const commit = p.node(1n).status().commit;
    p.drop = (m) => m.type === MessageType.HeartbeatResp;
    p.node(1n).readIndex(enc('r1'));
    p.stabilize();
    expect(p.readStates.get(1n)).toEqual([]);
    p.drop = () => false;
    p.tickAll(1); // the periodic heartbeat carries the pending context again
    expect(p.readStates.get(1n)).toEqual([{ index: commit, context: enc('r1') }]);
  });

  it('a follower forwards the request and gets a ReadState', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.node(3n).readIndex(enc('f1'));
    p.stabilize();
    expect(p.readStates.get(3n)).toEqual([{ index: p.node(1n).status().commit, context: enc('f1') }]);
  });

  it('an isolated leader never answers (no quorum confirms it)', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.drop = cut(1n);
    p.node(1n).readIndex(enc('stale'));
    p.tickAll(5);
    expect(p.readStates.get(1n)).toEqual([]);
  });

  it('waits until the leader committed an entry of its term', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.drop = (m) => m.type === MessageType.AppResp;
    p.elect(1n);
    p.node(1n).readIndex(enc('early'));
    p.tickAll(2);
    expect(p.readStates.get(1n)).toEqual([]);
    p.drop = () => false;
    p.tickAll(2);
    expect(p.readStates.get(1n)).toHaveLength(1);
    expect(p.readStates.get(1n)![0]!.index).toBe(p.node(1n).status().commit);
  });

  it('a single-voter cluster answers at once', () => {
    const p = new Pump([1n]);
    p.elect(1n);
    p.node(1n).readIndex(enc('solo'));
    p.stabilize();
    expect(p.readStates.get(1n)).toHaveLength(1);
  });
});

describe('persistence gating', () => {
  it('a vote grant leaves only after the voter persisted it', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.stabilize();
    p.holdPersist.add(2n);
    p.drop = cut(3n);
    p.elect(1n);
    const grants = (): Message[] => p.sent.filter((m) => m.from === 2n && m.type === MessageType.VoteResp);
    expect(grants()).toHaveLength(0);
    expect(p.node(1n).status().role).toBe('candidate');
    p.releasePersist(2n);
    p.stabilize();
    expect(grants()).toHaveLength(1);
    expect(p.node(1n).status().role).toBe('leader');
  });

  it('with the voteBeforePersist fault the grant leaves at once (the fault is real)', () => {
    const p = new Pump([1n, 2n, 3n], { faults: { voteBeforePersist: true } });
    p.stabilize();
    p.holdPersist.add(2n);
    p.drop = cut(3n);
    p.elect(1n);
    expect(p.sent.filter((m) => m.from === 2n && m.type === MessageType.VoteResp && !m.reject)).toHaveLength(1);
  });

  it('a candidate counts its own vote only once it is durable', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.stabilize();
    p.holdPersist.add(1n);
    p.drop = cut(3n);
    p.elect(1n);
    // Node 2 granted; with node 3 unreachable the candidate needs its own vote, not yet durable.
    expect(p.sent.some((m) => m.from === 2n && m.type === MessageType.VoteResp && !m.reject)).toBe(true);
    expect(p.node(1n).status().role).toBe('candidate');
    p.releasePersist(1n);
    expect(p.node(1n).status().role).toBe('leader');
  });

  it('a candidate holding a quorum of grants leads only once its own term and vote are durable (sim F4)', () => {
    const p = new Pump([1n, 2n, 3n, 4n, 5n]);
    p.stabilize();
    p.holdPersist.add(1n);
    p.elect(1n);
    // Four grants from the others are a quorum of five without node 1's own vote; still it must not lead,
    // or a crash now would let it restart in the old term and lead the same term again with another log.
    const grants = p.sent.filter((m) => m.to === 1n && m.type === MessageType.VoteResp && !m.reject);
    expect(grants.length).toBeGreaterThanOrEqual(3);
    expect(p.node(1n).status().role).toBe('candidate');
    expect(p.sent.some((m) => m.from === 1n && (m.type === MessageType.App || m.type === MessageType.Heartbeat))).toBe(false);
    p.releasePersist(1n);
    p.stabilize();
    expect(p.node(1n).status().role).toBe('leader');
  });

  it('an append acknowledgement leaves only after the follower persisted the entries', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.holdPersist.add(2n);
    p.holdPersist.add(3n);
    const before = p.sent.length;
    p.node(1n).propose(enc('p'));
    p.stabilize();
    const acks = (): Message[] =>
      p.sent.slice(before).filter((m) => m.type === MessageType.AppResp && !m.reject && m.index > 0);
    expect(acks()).toHaveLength(0);
    expect(p.node(1n).status().commit).toBeLessThan(p.node(1n).status().lastIndex);
    p.releasePersist(2n);
    p.stabilize();
    expect(acks().length).toBeGreaterThan(0);
    expect(p.node(1n).status().commit).toBe(p.node(1n).status().lastIndex);
  });

  it('the leader commits with its followers while its own write is in flight, and applies only once durable', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.holdPersist.add(1n);
    p.node(1n).propose(enc('in-flight'));
    p.stabilize();
    const st = p.node(1n).status();
    expect(st.commit).toBe(st.lastIndex);
    expect(p.appliedData(1n)).toEqual([]);
    expect(p.appliedData(2n)).toEqual(['in-flight']);
    p.releasePersist(1n);
    p.stabilize();
    expect(p.appliedData(1n)).toEqual(['in-flight']);
  });

  it('a Ready with only a commit change does not need a sync; term or entries do', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.holdPersist.add(2n);
    p.node(1n).propose(enc('s'));
    p.stabilize();
    const rds = [...p.held.get(2n)!];
    expect(rds.some((rd) => rd.entries.length > 0 && rd.mustSync)).toBe(true);
    p.releasePersist(2n);
    p.stabilize();
    p.tickAll(1);
    rds.push(...p.held.get(2n)!);
    const commitOnly = rds.filter((rd) => rd.hardState !== undefined && rd.entries.length === 0);
    expect(commitOnly.length).toBeGreaterThan(0);
    for (const rd of commitOnly) expect(rd.mustSync).toBe(false);
  });

  it('hands out each committed entry once, in order, on every node', () => {
    const p = new Pump([1n, 2n, 3n], { maxMsgBytes: 64 });
    p.elect(1n);
    for (let i = 0; i < 50; i++) p.node((BigInt(i % 3) + 1n) as bigint).propose(enc(`e${i}`));
    p.stabilize();
    p.tickAll(2);
    for (const id of [1n, 2n, 3n]) {
      const idx = p.applied.get(id)!.map((e) => e.index);
      expect(idx).toEqual(Array.from({ length: idx.length }, (_, i) => i + 1));
      expect(p.appliedData(id)).toHaveLength(50);
    }
  });
});
