/**
 * Witness members in the core (src/raft/witness.ts): a voter that persists and acknowledges but never applies,
 * serves nobody, keeps only the log tail a data voter may still need, and leads only to hand its log over.
 */
import { describe, expect, it } from 'vitest';
import { MemberConfig, decodeConfChange, encodeConfChange } from '../../src/raft/conf.js';
import { MessageType } from '../../src/raft/index.js';
import type { ConfChange, Message } from '../../src/raft/index.js';
import { Pump, enc } from './pump.js';

const cut =
  (...ids: bigint[]) =>
  (m: Message): boolean =>
    ids.includes(m.from) || ids.includes(m.to);
const cc = (type: ConfChange['type'], nodeId: bigint): ConfChange => ({ type, nodeId, context: new Uint8Array(0) });

/** Data voters 1 and 2, witness 3; node 1 leads. */
function twoBoards(): Pump {
  const p = new Pump([1n, 2n, 3n], { witnesses: [3n] });
  p.elect(1n);
  expect(p.leaders()).toEqual([1n]);
  return p;
}

/** Kill a node: it receives nothing and ticks no more. */
function kill(p: Pump, id: bigint): void {
  p.nodes.delete(id);
  p.queue = p.queue.filter((m) => m.to !== id);
}

describe('witness configuration', () => {
  it('a witness is a voter; it is added, encoded, snapshotted and removed as one', () => {
    const conf = new MemberConfig({ voters: [1n, 2n], learners: [] });
    const add = decodeConfChange(encodeConfChange(cc('addWitness', 3n)));
    expect(add.type).toBe('addWitness');
    conf.apply(add);
    expect(conf.toConfState()).toEqual({ voters: [1n, 2n, 3n], learners: [], witnesses: [3n] });
    expect(conf.dataVoters()).toEqual([1n, 2n]);
    expect(new MemberConfig(conf.toConfState()).isWitness(3n)).toBe(true);
    conf.apply(cc('addWitness', 2n)); // a member keeps its role
    expect(conf.isWitness(2n)).toBe(false);
    conf.apply(cc('removeNode', 3n));
    expect(conf.toConfState()).toEqual({ voters: [1n, 2n], learners: [] });
    expect(() => new MemberConfig({ voters: [1n], learners: [], witnesses: [2n] })).toThrow(/not a voter/);
  });

  it('a bootstrapped configuration with a witness is the same on every node, in the log', () => {
    const p = twoBoards();
    for (const id of [1n, 2n, 3n]) expect(p.node(id).status().confState).toEqual({ voters: [1n, 2n, 3n], learners: [], witnesses: [3n] });
    p.restart(3n, p.node(3n).status().applied);
    expect(p.node(3n).status().confState.witnesses).toEqual([3n]);
  });

  it('validates witness changes: no conversion, no configuration left without a data voter', () => {
    const p = twoBoards();
    const l = p.node(1n);
    expect(l.proposeConfChange(cc('addWitness', 2n))).toEqual({ ok: false, error: 'memberExists' });
    expect(l.proposeConfChange(cc('addVoter', 3n))).toEqual({ ok: false, error: 'memberExists' });
    expect(l.proposeConfChange(cc('removeNode', 2n))).toEqual({ ok: true });
    p.stabilize();
    expect(l.status().confState).toEqual({ voters: [1n, 3n], learners: [], witnesses: [3n] });
    expect(l.proposeConfChange(cc('removeNode', 1n))).toEqual({ ok: false, error: 'noDataVoter' });
    expect(l.proposeConfChange(cc('addWitness', 4n))).toEqual({ ok: true });
    p.add(4n, undefined);
    p.stabilize();
    expect(p.node(4n).status().confState.witnesses).toEqual([3n, 4n]);
  });
});

describe('witness behaviour', () => {
  it('its acknowledgement counts toward commit: the leader commits with the witness while the other data voter is cut off', () => {
    const p = twoBoards();
    p.drop = cut(2n);
    expect(p.node(1n).propose(enc('x')).ok).toBe(true);
    p.stabilize();
    expect(p.appliedData(1n)).toEqual(['x']);
    expect(p.appliedData(3n)).toEqual([]);
  });

  it('takes no proposal, read or transfer itself, and a data leader never transfers to it', () => {
    const p = twoBoards();
    expect(p.node(3n).propose(enc('x'))).toEqual({ ok: false, error: 'proposalDropped' });
    p.node(3n).readIndex(enc('r'));
    p.node(1n).transferLeader(3n);
    p.stabilize();
    expect(p.readStates.get(3n)).toEqual([]);
    expect(p.node(1n).status().leadTransferee).toBe(0n);
    p.tickAll(25);
    expect(p.leaders()).toEqual([1n]);
    expect(p.sent.filter((m) => m.type === MessageType.TimeoutNow)).toEqual([]);
  });

  it('the hard case: the data leader dies after committing with the witness; the witness hands its log to the survivor', () => {
    const p = twoBoards();
    expect(p.node(1n).propose(enc('a')).ok).toBe(true);
    p.stabilize();
    p.drop = cut(2n);
    for (const x of ['b', 'c', 'd']) expect(p.node(1n).propose(enc(x)).ok).toBe(true);
    p.stabilize();
    expect(p.appliedData(1n)).toEqual(['a', 'b', 'c', 'd']);
    expect(p.appliedData(2n)).toEqual(['a']);
    kill(p, 1n);
    p.drop = () => false;
    // The survivor cannot win: the witness's log is newer.
    p.elect(2n);
    p.tickAll(1);
    expect(p.node(2n).status().role).not.toBe('leader');
    // The witness wins, replicates its log to the survivor and hands leadership over at once.
    p.elect(3n);
    expect(p.leaders()).toEqual([2n]);
    expect(p.appliedData(2n)).toEqual(['a', 'b', 'c', 'd']);
    expect(p.node(2n).propose(enc('e')).ok).toBe(true);
    p.stabilize();
    expect(p.appliedData(2n)).toEqual(['a', 'b', 'c', 'd', 'e']);
    // As leader the witness appended nothing of its term and answered nobody.
    const witnessTerm = Math.max(...p.sent.filter((m) => m.from === 3n && m.type === MessageType.App).map((m) => m.term));
    const ownEntries = p.sent.filter((m) => m.from === 3n).flatMap((m) => m.entries).filter((e) => e.term === witnessTerm);
    expect(ownEntries).toEqual([]);
    expect(p.appliedData(3n)).toEqual([]);
  });

  it('a witness leader serves nothing and steps down within an election timeout when nobody takes over', () => {
    const p = twoBoards();
    p.drop = cut(2n);
    expect(p.node(1n).propose(enc('a')).ok).toBe(true);
    p.stabilize();
    p.drop = (m) => m.type === MessageType.TimeoutNow;
    kill(p, 1n);
    p.elect(3n);
    expect(p.leaders()).toEqual([3n]);
    expect(p.node(3n).propose(enc('x'))).toEqual({ ok: false, error: 'proposalDropped' });
    expect(p.node(3n).proposeConfChange(cc('removeNode', 1n))).toEqual({ ok: false, error: 'proposalDropped' });
    // Forwarded by the data follower: dropped by the witness, never committed.
    expect(p.node(2n).propose(enc('y')).ok).toBe(true);
    p.node(2n).readIndex(enc('r'));
    p.stabilize();
    const resent = p.sent.filter((m) => m.from === 3n && m.type === MessageType.TimeoutNow).length;
    let ticks = 0;
    while (p.node(3n).status().role === 'leader') {
      p.tick(3n);
      p.tick(2n);
      p.stabilize();
      ticks++;
    }
    expect(ticks).toBeLessThanOrEqual(10);
    expect(p.sent.filter((m) => m.from === 3n && m.type === MessageType.TimeoutNow).length).toBeGreaterThan(resent);
    // The committed entry reached 2 through the witness; the forwarded proposal never committed.
    expect(p.appliedData(2n)).toEqual(['a']);
    expect(p.readStates.get(2n)).toEqual([]);
  });

  it('a witness pre-candidate that refuses a lagging data voter\'s pre-vote asks again at once, and hands over', () => {
    const p = new Pump([1n, 2n, 3n], { witnesses: [3n], preVote: true, checkQuorum: true });
    p.elect(1n);
    p.drop = cut(2n);
    for (const x of ['a', 'b']) expect(p.node(1n).propose(enc(x)).ok).toBe(true);
    p.stabilize();
    kill(p, 1n);
    p.drop = () => false;
    // The witness times out first; the survivor, still in its leader lease, ignores its pre-vote.
    for (let i = 0; i < 30 && p.node(3n).status().role !== 'preCandidate'; i++) p.tick(3n);
    p.stabilize();
    expect(p.node(3n).status().role).toBe('preCandidate');
    // The survivor times out and pre-votes: refused (its log is behind), and the witness asks again at once.
    for (let i = 0; i < 30 && p.leaders().length === 0; i++) {
      p.tick(2n);
      p.stabilize();
    }
    expect(p.leaders()).toEqual([2n]);
    expect(p.appliedData(2n)).toEqual(['a', 'b']);
  });

  it('a data voter refuses its vote to a witness whose log is not newer: with equal logs the data voter leads', () => {
    const p = twoBoards();
    kill(p, 1n);
    p.elect(3n);
    expect(p.leaders()).toEqual([]);
    const refusals = p.sent.filter((m) => m.from === 2n && m.to === 3n && m.type === MessageType.VoteResp && m.reject);
    expect(refusals.length).toBeGreaterThan(0);
    p.elect(2n);
    expect(p.leaders()).toEqual([2n]);
    expect(p.sent.filter((m) => m.from === 3n && m.type === MessageType.App)).toEqual([]);
  });

  it('a data leader removing itself hands over to the data voter, never to the witness', () => {
    const p = twoBoards();
    expect(p.node(1n).proposeConfChange(cc('removeNode', 1n)).ok).toBe(true);
    p.stabilize();
    expect(p.leaders()).toEqual([2n]);
    expect(p.sent.filter((m) => m.type === MessageType.TimeoutNow).map((m) => m.to)).toEqual([2n]);
  });
});

describe('the witness log', () => {
  it('is released up to what every data voter holds durably, and kept above a lagging data voter', () => {
    const p = twoBoards();
    for (let i = 0; i < 10; i++) p.node(1n).propose(enc(`a${i}`));
    p.stabilize();
    p.tickAll(2);
    const commit = p.node(1n).status().commit;
    expect(p.durable.get(3n)!.snapshot.index).toBe(commit);
    expect(p.durable.get(3n)!.entries).toEqual([]);
    expect(p.durable.get(3n)!.snapshot.confState.witnesses).toEqual([3n]);
    // Data voter 2 falls behind: the witness keeps every entry it lacks.
    p.drop = cut(2n);
    for (let i = 0; i < 10; i++) p.node(1n).propose(enc(`b${i}`));
    p.stabilize();
    p.tickAll(2);
    expect(p.durable.get(3n)!.snapshot.index).toBe(commit);
    expect(p.durable.get(3n)!.entries.map((e) => e.index)).toEqual(Array.from({ length: 10 }, (_, i) => commit + 1 + i));
    // A restart reads the released log back.
    p.restart(3n, commit);
    p.drop = () => false;
    p.tickAll(6); // data voter 2 catches up once the leader notices its lost appends (stall detection)
    expect(p.durable.get(3n)!.snapshot.index).toBe(p.node(1n).status().commit);
  });

  it('a witness behind the compacted log gets a snapshot without data', () => {
    const p = twoBoards();
    p.drop = cut(3n);
    for (let i = 0; i < 5; i++) p.node(1n).propose(enc(`a${i}`));
    p.stabilize();
    const s = p.node(1n).status();
    p.node(1n).compact({ meta: { index: s.applied, term: s.term, confState: s.confState }, data: enc('state') }, 0);
    p.drop = () => false;
    p.tickAll(3);
    const snaps = p.sent.filter((m) => m.type === MessageType.Snap);
    expect(snaps.map((m) => [m.to, m.snapshot!.data.byteLength])).toEqual([[3n, 0]]);
    expect(p.restored.get(3n)!.map((x) => x.meta.index)).toEqual([s.applied]);
    expect(p.appliedData(3n)).toEqual([]);
  });

  it('a data voter behind the witness log start gets no snapshot from a witness leader; it waits for a data leader', () => {
    const p = twoBoards();
    for (let i = 0; i < 5; i++) p.node(1n).propose(enc(`a${i}`));
    p.stabilize();
    p.tickAll(2);
    const released = p.durable.get(3n)!.snapshot.index;
    expect(released).toBeGreaterThan(3);
    // Data voter 2 is restored to an old state (only the bootstrap entries), after the witness released more.
    const d2 = p.durable.get(2n)!;
    d2.entries = d2.entries.filter((e) => e.index <= 3);
    d2.hardState = { ...d2.hardState, commit: 3 };
    p.restart(2n, 3);
    kill(p, 1n);
    const sentBefore = p.sent.length;
    for (let i = 0; i < 4; i++) {
      p.elect(3n);
      p.tickAll(12);
    }
    const witnessSent = p.sent.slice(sentBefore).filter((m) => m.from === 3n);
    expect(witnessSent.some((m) => m.type === MessageType.Heartbeat)).toBe(true); // it did lead
    expect(witnessSent.filter((m) => m.type === MessageType.Snap || m.type === MessageType.TimeoutNow)).toEqual([]);
    expect(p.node(2n).status().role).not.toBe('leader');
    // The data leader comes back: it leads (directly, or handed over by the witness) and catches 2 up.
    p.restart(1n, p.durable.get(1n)!.hardState.commit);
    for (let i = 0; i < 10 && !p.leaders().includes(1n); i++) p.tickAll(5);
    expect(p.leaders()).toEqual([1n]);
    p.tickAll(2);
    expect(p.appliedData(2n).slice(-5)).toEqual(['a0', 'a1', 'a2', 'a3', 'a4']);
  });
});
