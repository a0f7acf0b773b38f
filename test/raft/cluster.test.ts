import { describe, expect, it } from 'vitest';
import { MessageType } from '../../src/raft/index.js';
import type { Message } from '../../src/raft/index.js';
import { Pump, enc } from './pump.js';

const cut =
  (...ids: bigint[]) =>
  (m: Message): boolean =>
    ids.includes(m.from) || ids.includes(m.to);

describe('elections', () => {
  it('a single-node cluster elects itself and commits once its own write is durable', () => {
    const p = new Pump([1n]);
    p.elect(1n);
    expect(p.leaders()).toEqual([1n]);
    expect(p.node(1n).propose(enc('solo')).ok).toBe(true);
    p.stabilize();
    expect(p.appliedData(1n)).toEqual(['solo']);
  });

  it('draws randomized election timeouts in [electionTicks, 2*electionTicks)', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const p = new Pump([1n, 2n, 3n], { seed, electionTicks: 10 });
      p.stabilize();
      let ticks = 0;
      while (p.node(1n).status().role === 'follower' && ticks < 100) {
        p.node(1n).tick();
        ticks++;
      }
      expect(ticks, `seed ${seed}`).toBeGreaterThanOrEqual(10);
      expect(ticks, `seed ${seed}`).toBeLessThan(20);
    }
  });

  it('a follower rejects a candidate whose log is behind', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.drop = cut(3n);
    p.node(1n).propose(enc('a'));
    p.stabilize();
    p.drop = cut(1n);
    p.elect(3n);
    expect(p.node(3n).status().role).not.toBe('leader');
    p.elect(2n);
    expect(p.node(2n).status().role).toBe('leader');
  });

  it('PreVote: a partitioned node does not bump its term and does not depose the leader on return', () => {
    const p = new Pump([1n, 2n, 3n], { preVote: true, checkQuorum: true });
    p.elect(1n);
    const term = p.node(1n).status().term;
    p.drop = cut(3n);
    for (let i = 0; i < 100; i++) {
      p.tickAll();
    }
    expect(p.node(3n).status().term).toBe(term);
    expect(p.node(3n).status().role).toBe('preCandidate');
    p.drop = () => false;
    p.tickAll(5);
    expect(p.leaders()).toEqual([1n]);
    expect(p.node(1n).status().term).toBe(term);
    expect(p.node(3n).status().leader).toBe(1n);
  });

  it('without PreVote the same partition does bump terms (the test can tell the difference)', () => {
    const p = new Pump([1n, 2n, 3n], { preVote: false });
    p.elect(1n);
    const term = p.node(1n).status().term;
    p.drop = cut(3n);
    p.tick(3n, 50);
    p.stabilize();
    expect(p.node(3n).status().term).toBeGreaterThan(term);
  });

  it('CheckQuorum: a leader that hears from no quorum steps down within an election timeout', () => {
    const p = new Pump([1n, 2n, 3n], { checkQuorum: true, electionTicks: 10 });
    p.elect(1n);
    p.tickAll(3);
    p.drop = cut(1n);
    p.tick(1n, 9);
    expect(p.node(1n).status().role).toBe('leader');
    p.tick(1n, 1);
    expect(p.node(1n).status().role).toBe('follower');
  });

  it('CheckQuorum: followers with a live leader ignore a disruptive vote request', () => {
    const p = new Pump([1n, 2n, 3n], { checkQuorum: true });
    p.elect(1n);
    const term = p.node(1n).status().term;
    // Node 3 never hears the leader's heartbeats (one-way), times out and campaigns.
    p.drop = (m) => m.to === 3n && m.type === MessageType.Heartbeat;
    p.tick(3n, 30);
    p.stabilize();
    expect(p.node(3n).status().term).toBeGreaterThan(term);
    expect(p.leaders()).toEqual([1n]);
    expect(p.node(2n).status().term).toBe(term);
  });
});

describe('replication', () => {
  it('sends several entries per MsgApp up to maxMsgBytes and catches up a lagging follower', () => {
    const p = new Pump([1n, 2n, 3n], { maxMsgBytes: 200 });
    p.elect(1n);
    p.drop = cut(3n);
    for (let i = 0; i < 30; i++) p.node(1n).propose(enc(`v${i}`.padEnd(40, '.')));
    p.stabilize();
    p.drop = () => false;
    const before = p.sent.length;
    p.tickAll(3);
    const apps = p.sent.slice(before).filter((m) => m.type === MessageType.App && m.to === 3n && m.entries.length > 0);
    expect(Math.max(...apps.map((m) => m.entries.length))).toBeGreaterThan(1);
    for (const m of apps) {
      const bytes = m.entries.reduce((s, e) => s + e.data.byteLength + 16, 0);
      expect(m.entries.length === 1 || bytes <= 200).toBe(true);
    }
    expect(p.appliedData(3n)).toEqual(p.appliedData(1n));
    expect(p.appliedData(3n)).toHaveLength(30);
  });

  it('backtracks fast over a long divergent suffix (few rejections)', () => {
    const p = new Pump([1n, 2n, 3n], { maxMsgBytes: 64 });
    p.elect(1n);
    // Leader 1 appends 50 entries nobody else gets; then 2 leads and overwrites them.
    p.drop = (m) => m.from === 1n;
    for (let i = 0; i < 50; i++) p.node(1n).propose(enc(`old${i}`));
    p.stabilize();
    p.drop = cut(1n);
    p.elect(2n);
    for (let i = 0; i < 5; i++) p.node(2n).propose(enc(`new${i}`));
    p.stabilize();
    p.drop = () => false;
    const before = p.sent.length;
    p.tickAll(3);
    const rejects = p.sent.slice(before).filter((m) => m.type === MessageType.AppResp && m.reject && m.from === 1n);
    expect(rejects.length).toBeLessThanOrEqual(3);
    expect(p.appliedData(1n)).toEqual(['new0', 'new1', 'new2', 'new3', 'new4']);
  });

  it('keeps at most maxInflightMsgs unacknowledged MsgApps per follower', () => {
    const p = new Pump([1n, 2n, 3n], { maxMsgBytes: 1, maxInflightMsgs: 3 });
    p.elect(1n);
    p.drop = (m) => m.from === 2n && m.type === MessageType.AppResp;
    const before = p.sent.length;
    for (let i = 0; i < 10; i++) p.node(1n).propose(enc(`x${i}`));
    p.stabilize();
    const toTwo = p.sent.slice(before).filter((m) => m.type === MessageType.App && m.to === 2n && m.entries.length > 0);
    expect(toTwo).toHaveLength(3);
    expect(p.node(1n).status().progress!.get(2n)!.inflight).toBe(3);
  });

  it('drops proposals beyond maxUncommittedBytes', () => {
    const p = new Pump([1n, 2n, 3n], { maxUncommittedBytes: 100 });
    p.elect(1n);
    p.drop = cut(1n);
    const results = Array.from({ length: 5 }, () => p.node(1n).propose(new Uint8Array(30)));
    expect(results.map((r) => r.ok)).toEqual([true, true, true, false, false]);
    expect(results[3]).toEqual({ ok: false, error: 'proposalDropped' });
    // Once committed and handed out, the bytes are released and proposals are accepted again.
    p.drop = () => false;
    p.tickAll(4);
    expect(p.applied.get(1n)!.filter((e) => e.data.byteLength === 30)).toHaveLength(3);
    expect(p.node(1n).propose(new Uint8Array(30)).ok).toBe(true);
  });

  it('forwards a follower proposal to the leader', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    expect(p.node(3n).propose(enc('fwd')).ok).toBe(true);
    p.stabilize();
    expect(p.appliedData(1n)).toEqual(['fwd']);
    const q = new Pump([1n, 2n, 3n]);
    expect(q.node(3n).propose(enc('x'))).toEqual({ ok: false, error: 'noLeader' });
  });
});

describe('figure 8: commit only by counting replicas of a current-term entry', () => {
  function scenario(faults?: { commitEarlierTermByCount: boolean }): Pump {
    const p = new Pump([1n, 2n, 3n], { maxMsgBytes: 1, ...(faults ? { faults } : {}) });
    p.elect(1n); // term 2: no-op at index 4
    p.drop = (m) => m.from === 1n;
    p.node(1n).propose(enc('x')); // index 5, term 2, only on node 1
    p.stabilize();
    p.drop = (m) => cut(1n)(m) || (m.from === 2n && m.type === MessageType.App);
    p.elect(2n); // term 3: its no-op at index 5 stays on node 2
    expect(p.leaders()).toContain(2n);
    // Only node 2's heartbeat to node 1 gets through: node 1 learns term 3 and steps down.
    p.drop = (m) => !(m.from === 2n && m.to === 1n && m.type === MessageType.Heartbeat);
    p.tick(2n, 1);
    p.stabilize();
    expect(p.node(1n).status().role).toBe('follower');
    // Node 3 may receive entry 5 (term 2), but entry 6 (term 4) only until it holds entry 5.
    p.drop = (m) =>
      cut(2n)(m) ||
      (m.type === MessageType.App &&
        m.to === 3n &&
        m.entries.some((e) => e.index >= 6) &&
        p.node(3n).status().lastIndex >= 5);
    p.elect(1n); // term 4: node 3 grants (node 1's log ends (5, 2), node 3's (4, 2))
    expect(p.node(1n).status().role).toBe('leader');
    expect(p.node(1n).status().term).toBe(4);
    return p;
  }

  it('does not commit the term-2 entry held by a majority while the term-4 entry is not', () => {
    const p = scenario();
    const st = p.node(1n).status();
    expect(st.progress!.get(3n)!.match).toBe(5);
    expect(st.commit).toBe(4);
    p.drop = cut(2n);
    p.stabilize();
    p.tickAll(4); // the lost MsgApp is resent after a few heartbeat rounds without progress
    expect(p.node(1n).status().commit).toBe(6);
    expect(p.appliedData(3n)).toEqual(['x']);
  });

  it('with the commitEarlierTermByCount fault it does commit it (the fault is real)', () => {
    const p = scenario({ commitEarlierTermByCount: true });
    expect(p.node(1n).status().commit).toBe(5);
  });
});

describe('snapshots', () => {
  it('sends a snapshot to a follower behind the compacted log; it restores and continues', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.drop = cut(3n);
    for (let i = 0; i < 20; i++) p.node(1n).propose(enc(`s${i}`));
    p.stabilize();
    const st = p.node(1n).status();
    const snapshot = { meta: { index: st.applied, term: st.term, confState: st.confState }, data: enc('state') };
    p.node(1n).compact(snapshot, 0);
    p.drop = () => false;
    p.tickAll(3);
    expect(p.sent.some((m) => m.type === MessageType.Snap && m.to === 3n)).toBe(true);
    expect(p.restored.get(3n)?.[0]?.meta.index).toBe(st.applied);
    p.node(1n).propose(enc('after'));
    p.stabilize();
    expect(p.appliedData(3n)).toEqual(['after']);
    expect(p.node(3n).status().commit).toBe(p.node(1n).status().commit);
    expect(p.node(3n).status().applied).toBe(p.node(1n).status().applied);
    expect(p.node(1n).status().progress!.get(3n)!.state).toBe('replicate');
  });

  it('a lost snapshot with no report at all is resent after a few election timeouts', () => {
    const p = new Pump([1n, 2n, 3n], { electionTicks: 10 });
    p.elect(1n);
    p.drop = cut(3n);
    for (let i = 0; i < 5; i++) p.node(1n).propose(enc(`s${i}`));
    p.stabilize();
    const st = p.node(1n).status();
    p.node(1n).compact({ meta: { index: st.applied, term: st.term, confState: st.confState }, data: enc('s') }, 0);
    let snaps = 0;
    p.drop = (m) => m.type === MessageType.Snap && ++snaps === 1;
    p.tickAll(4);
    expect(p.node(1n).status().progress!.get(3n)!.state).toBe('snapshot');
    p.tickAll(30);
    expect(p.node(1n).status().progress!.get(3n)!.state).toBe('snapshot');
    p.tickAll(20);
    expect(snaps).toBe(2);
    expect(p.restored.get(3n)).toHaveLength(1);
    expect(p.node(1n).status().progress!.get(3n)!.state).toBe('replicate');
  });

  it('a failed snapshot send is retried after reportSnapshot(false)', () => {
    const p = new Pump([1n, 2n, 3n]);
    p.elect(1n);
    p.drop = cut(3n);
    for (let i = 0; i < 5; i++) p.node(1n).propose(enc(`s${i}`));
    p.stabilize();
    const st = p.node(1n).status();
    p.node(1n).compact({ meta: { index: st.applied, term: st.term, confState: st.confState }, data: enc('s') }, 0);
    p.drop = (m) => m.type === MessageType.Snap;
    p.tickAll(4);
    expect(p.node(1n).status().progress!.get(3n)!.state).toBe('snapshot');
    p.node(1n).reportSnapshot(3n, false);
    expect(p.node(1n).status().progress!.get(3n)!.state).toBe('probe');
    p.drop = () => false;
    p.tickAll(3);
    expect(p.restored.get(3n)).toHaveLength(1);
    expect(p.node(1n).status().progress!.get(3n)!.state).toBe('replicate');
  });
});
