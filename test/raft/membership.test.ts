import { describe, expect, it } from 'vitest';
import { MessageType } from '../../src/raft/index.js';
import type { ConfChange, Message } from '../../src/raft/index.js';
import { Pump, enc } from './pump.js';

const cut =
  (...ids: bigint[]) =>
  (m: Message): boolean =>
    ids.includes(m.from) || ids.includes(m.to);
const grant: Message = {
  type: MessageType.VoteResp,
  from: 0n,
  to: 0n,
  term: 0,
  logTerm: 0,
  index: 0,
  entries: [],
  commit: 0,
  reject: false,
  rejectHint: 0,
};
const cc = (type: ConfChange['type'], nodeId: bigint): ConfChange => ({ type, nodeId, context: new Uint8Array(0) });

describe('membership changes', () => {
  it('allows one pending change at a time', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    const leader = p.node(1n);
    expect(leader.proposeConfChange(cc('addLearner', 4n))).toEqual({ ok: true });
    expect(leader.proposeConfChange(cc('addLearner', 5n))).toEqual({ ok: false, error: 'confChangePending' });
    p.stabilize();
    expect(leader.proposeConfChange(cc('addLearner', 5n))).toEqual({ ok: true });
    p.stabilize();
    expect(leader.status().confState).toEqual({ voters: [1n, 2n, 3n], learners: [4n, 5n] });
    expect(p.node(2n).status().confState).toEqual({ voters: [1n, 2n, 3n], learners: [4n, 5n] });
  });

  it('refuses changes before the new leader committed an entry of its term', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.drop = (m) => m.type === MessageType.AppResp;
    p.elect(1n);
    expect(p.node(1n).status().role).toBe('leader');
    expect(p.node(1n).proposeConfChange(cc('addLearner', 4n))).toEqual({ ok: false, error: 'leaderNotCommittedInTerm' });
    p.drop = () => false;
    p.tickAll(2);
    expect(p.node(1n).proposeConfChange(cc('addLearner', 4n))).toEqual({ ok: true });
  });

  it('refuses on a follower and validates members', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    expect(p.node(2n).proposeConfChange(cc('addLearner', 4n))).toEqual({ ok: false, error: 'notLeader' });
    expect(p.node(1n).proposeConfChange(cc('addVoter', 2n))).toEqual({ ok: false, error: 'memberExists' });
    expect(p.node(1n).proposeConfChange(cc('addLearner', 3n))).toEqual({ ok: false, error: 'memberExists' });
    expect(p.node(1n).proposeConfChange(cc('removeNode', 9n))).toEqual({ ok: false, error: 'memberNotFound' });
  });

  it('refuses to promote a learner that is not caught up, then accepts once it is', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.add(4n, undefined);
    p.drop = cut(4n);
    expect(p.node(1n).proposeConfChange(cc('addLearner', 4n)).ok).toBe(true);
    p.stabilize();
    for (let i = 0; i < 20; i++) p.node(1n).propose(enc(`w${i}`));
    p.stabilize();
    expect(p.node(1n).proposeConfChange(cc('addVoter', 4n))).toEqual({ ok: false, error: 'learnerNotCaughtUp' });
    p.drop = () => false;
    p.tickAll(3);
    expect(p.appliedData(4n)).toHaveLength(20);
    expect(p.node(1n).proposeConfChange(cc('addVoter', 4n))).toEqual({ ok: true });
    p.stabilize();
    expect(p.node(4n).status().confState.voters).toEqual([1n, 2n, 3n, 4n]);
    expect(p.node(1n).status().progress!.get(4n)!.isLearner).toBe(false);
  });

  it('refuses a removal that would leave too few active voters (strict reconfig)', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.drop = cut(3n);
    p.tickAll(12); // node 3 silent for more than an election timeout
    expect(p.node(1n).status().progress!.get(3n)!.recentActive).toBe(false);
    expect(p.node(1n).proposeConfChange(cc('removeNode', 2n))).toEqual({ ok: false, error: 'wouldLoseQuorum' });
    expect(p.node(1n).proposeConfChange(cc('addVoter', 5n))).toEqual({ ok: false, error: 'wouldLoseQuorum' });
    expect(p.node(1n).proposeConfChange(cc('removeNode', 3n))).toEqual({ ok: true });
  });

  it('removes the leader: it steps down after applying and never campaigns; the rest elect a leader', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    expect(p.node(1n).proposeConfChange(cc('removeNode', 1n))).toEqual({ ok: true });
    p.stabilize();
    expect(p.node(1n).status().role).toBe('follower');
    expect(p.node(2n).status().confState.voters).toEqual([2n, 3n]);
    p.tickAll(60);
    expect(p.node(1n).status().role).toBe('follower');
    expect(p.leaders()).toHaveLength(1);
    expect(p.leaders()[0]).not.toBe(1n);
    const leader = p.node(p.leaders()[0]!);
    expect(leader.propose(enc('after')).ok).toBe(true);
    p.stabilize();
    expect(p.appliedData(2n)).toEqual(['after']);
  });
});

describe('leader self-removal hand-off', () => {
  it('in a two-voter cluster the survivor is elected at once, even if the final commit index was lost', () => {
    const p = new Pump([1n, 2n]);
    p.elect(1n);
    expect(p.node(1n).proposeConfChange(cc('removeNode', 1n)).ok).toBe(true);
    const removalIndex = p.node(1n).status().lastIndex;
    p.drop = (m) => m.from === 1n && m.type === MessageType.App && m.commit >= removalIndex;
    p.stabilize();
    expect(p.node(1n).status().role).toBe('follower');
    expect(p.node(2n).status().role).toBe('leader');
    // The removed node is gone for good: the survivor still commits alone.
    p.drop = cut(1n);
    expect(p.node(2n).propose(enc('alone')).ok).toBe(true);
    p.stabilize();
    expect(p.appliedData(2n)).toEqual(['alone']);
    expect(p.node(2n).status().confState.voters).toEqual([2n]);
  });
});

describe('learners', () => {
  it('never campaign, and their votes never count; they receive entries', () => {
    const p = new Pump([1n, 2n], { learners: [3n] });
    p.stabilize();
    p.tick(3n, 100);
    p.stabilize();
    expect(p.node(3n).status().role).toBe('follower');
    expect(p.node(3n).status().term).toBe(1);
    p.drop = cut(2n);
    p.elect(1n);
    // Candidates do not ask learners, and a learner's grant does not count.
    expect(p.sent.some((m) => m.to === 3n && m.type === MessageType.Vote)).toBe(false);
    const st = p.node(1n).status();
    expect(st.role).toBe('candidate');
    p.node(1n).step({ ...grant, from: 3n, to: 1n, term: st.term });
    expect(p.node(1n).status().role).toBe('candidate');
    p.drop = () => false;
    p.tickAll(40);
    expect(p.leaders()).toHaveLength(1);
    p.node(p.leaders()[0]!).propose(enc('l'));
    p.stabilize();
    expect(p.appliedData(3n)).toEqual(['l']);
  });

  it('with the learnersVote fault a learner campaigns and learner grants count (the fault is real)', () => {
    const p = new Pump([1n, 2n], { learners: [3n], faults: { learnersVote: true } });
    p.stabilize();
    p.tick(3n, 100);
    p.stabilize();
    expect(p.node(3n).status().term).toBeGreaterThan(1);
    const q = new Pump([1n, 2n], { learners: [3n], faults: { learnersVote: true } });
    q.drop = cut(2n);
    q.elect(1n);
    expect(q.node(1n).status().role).toBe('leader');
  });

  it('a promoted learner that has not applied its promotion still helps elect the leader', () => {
    const p = new Pump([1n], { learners: [2n] });
    p.elect(1n);
    p.tickAll(2);
    expect(p.node(1n).proposeConfChange(cc('addVoter', 2n)).ok).toBe(true);
    // Node 1 applies the promotion; node 2 never hears of it. Node 1 then loses leadership.
    p.drop = cut(2n);
    p.stabilize();
    expect(p.node(1n).status().confState.voters).toEqual([1n, 2n]);
    expect(p.node(2n).status().confState.learners).toEqual([2n]);
    p.tickAll(30);
    p.drop = () => false;
    p.tickAll(60);
    expect(p.leaders()).toEqual([1n]);
    expect(p.node(2n).status().confState.voters).toEqual([1n, 2n]);
  });
});

describe('leader transfer', () => {
  it('hands leadership to an up-to-date follower', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.node(1n).transferLeader(2n);
    p.stabilize();
    expect(p.leaders()).toEqual([2n]);
  });

  it('catches a lagging transferee up first, and works when asked on a follower', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.drop = cut(3n);
    for (let i = 0; i < 5; i++) p.node(1n).propose(enc(`t${i}`));
    p.stabilize();
    p.drop = () => false;
    p.node(2n).transferLeader(3n);
    p.stabilize();
    expect(p.leaders()).toEqual([3n]);
    expect(p.appliedData(3n)).toHaveLength(5);
  });

  it('refuses proposals while transferring and aborts after an election timeout', () => {
    const p = new Pump([1n, 2n, 3n], { electionTicks: 10 });
    p.elect(1n);
    p.drop = cut(3n);
    p.node(1n).transferLeader(3n);
    p.stabilize();
    expect(p.node(1n).status().leadTransferee).toBe(3n);
    expect(p.node(1n).propose(enc('no'))).toEqual({ ok: false, error: 'proposalDropped' });
    p.tickAll(10);
    expect(p.node(1n).status().leadTransferee).toBe(0n);
    expect(p.node(1n).propose(enc('yes'))).toEqual({ ok: true });
  });

  it('ignores a transfer to itself, a non-member, or a learner', () => {
    const p = new Pump([1n, 2n, 3n], { learners: [4n] });
    p.elect(1n);
    for (const target of [1n, 9n, 4n]) {
      p.node(1n).transferLeader(target);
      p.stabilize();
      expect(p.node(1n).status().leadTransferee).toBe(0n);
      expect(p.leaders()).toEqual([1n]);
    }
  });
});
