/**
 * Unit tests of the simulator's own parts (event queue, network, disk, log mirror, checker), independent of
 * the Raft core: a checker that cannot fail or a disk that keeps un-synced writes would make every seed green.
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { EntryType, MessageType, type Entry, type Message } from '../../src/raft/types.js';
import { Checker } from './checker.js';
import { SimDisk } from './disk.js';
import { EventQueue } from './event-queue.js';
import { LogMirror, SimViolation } from './log-mirror.js';
import { SimNetwork } from './network.js';

const e = (index: number, term: number, data = ''): Entry => ({ index, term, type: EntryType.Normal, data: new TextEncoder().encode(data) });
const ack = (index: number) => ({ index, term: 1, readySeq: index });

function msg(type: Message['type'], from: bigint, to: bigint, over: Partial<Message> = {}): Message {
  return { type, from, to, term: 1, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0, ...over };
}

describe('event queue', () => {
  it('pops by time, then in insertion order for equal times', () => {
    const q = new EventQueue<string>();
    q.push(5, 'c');
    q.push(1, 'a');
    q.push(5, 'd');
    q.push(3, 'b');
    q.removeWhere((v) => v === 'x');
    const out: string[] = [];
    for (let x = q.pop(); x !== undefined; x = q.pop()) out.push(x.value);
    expect(out).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('network', () => {
  it('drops about the configured fraction and duplicates some', () => {
    const net = new SimNetwork(new Prng(7), { dropRate: 0.3, dupRate: 0.1, delaySteps: 2, jitterSteps: 4 });
    let delivered = 0;
    for (let i = 0; i < 10_000; i++) {
      const d = net.delaysFor(1n, 2n);
      for (const x of d) expect(x >= 2 && x <= 6).toBe(true);
      delivered += d.length;
    }
    expect(net.dropped).toBeGreaterThan(2700);
    expect(net.dropped).toBeLessThan(3300);
    expect(delivered).toBeGreaterThan(10_000 - net.dropped);
  });

  it('cuts one way, partitions, isolates and heals', () => {
    const net = new SimNetwork(new Prng(1));
    const all = [1n, 2n, 3n];
    net.cut(1n, 2n);
    expect(net.delaysFor(1n, 2n)).toEqual([]);
    expect(net.delaysFor(2n, 1n)).toHaveLength(1);
    net.partition([[1n], [2n, 3n]], all);
    expect(net.delaysFor(3n, 1n)).toEqual([]);
    expect(net.delaysFor(2n, 3n)).toHaveLength(1);
    net.healAll();
    net.isolate(3n, all);
    expect(net.delaysFor(1n, 3n)).toEqual([]);
    net.rejoin(3n);
    expect(net.delaysFor(1n, 3n)).toHaveLength(1);
  });
});

describe('disk', () => {
  it('makes writes durable only in order and only when their sync completes; a crash loses the rest', () => {
    const disk = new SimDisk(new Prng(1), { syncMinSteps: 10, syncMaxSteps: 10, slowRate: 0, slowMinSteps: 0, slowMaxSteps: 0 });
    disk.enqueue({ entries: [e(1, 1)], ack: ack(1), messagesAfterPersist: [] }, 0, true);
    disk.enqueue({ entries: [e(2, 1)], hardState: { term: 1, vote: 1n, commit: 1 }, ack: ack(2), messagesAfterPersist: [] }, 5, true);
    expect(disk.completeNext(9)).toBeUndefined();
    expect(disk.completeNext(10)?.ack?.index).toBe(1);
    expect(disk.completeNext(10)).toBeUndefined();
    expect(disk.durable.log.lastIndex()).toBe(1);
    expect(disk.crash()).toBe(1);
    expect(disk.completeNext(100)).toBeUndefined();
    const boot = disk.bootstrap();
    expect(boot.entries.map((x) => x.index)).toEqual([1]);
    expect(boot.hardState.term).toBe(0);
  });

  it('truncates a durable suffix on overwrite and releases entries behind a saved snapshot', () => {
    const disk = new SimDisk(new Prng(1));
    disk.enqueue({ entries: [e(1, 1), e(2, 1), e(3, 1)], ack: ack(3), messagesAfterPersist: [] }, 0, true);
    disk.enqueue({ entries: [e(2, 2)], ack: ack(2), messagesAfterPersist: [] }, 0, true);
    while (disk.completeNext(10) !== undefined);
    expect(disk.durable.log.entries.map((x) => `${x.index}@${x.term}`)).toEqual(['1@1', '2@2']);
    disk.enqueue({ entries: [], hardState: { term: 2, vote: 0n, commit: 1 }, ack: ack(2), messagesAfterPersist: [] }, 10, false);
    disk.saveSnapshot({ meta: { index: 1, term: 1, confState: { voters: [1n], learners: [] } }, data: new Uint8Array([1]) }, 10);
    expect(disk.bootstrap().snapshot.index).toBe(0);
    while (disk.completeNext(20) !== undefined);
    expect(disk.bootstrap().snapshot.index).toBe(1);
    expect(disk.bootstrap().entries.map((x) => x.index)).toEqual([2]);
  });
});

describe('log mirror', () => {
  it('rejects gaps and reports truncations', () => {
    const log = new LogMirror();
    expect(log.append([e(1, 1), e(2, 1)])).toBeUndefined();
    expect(() => log.append([e(4, 1)])).toThrow(SimViolation);
    expect(log.append([e(2, 2)])).toBe(2);
    expect(log.lastTerm()).toBe(2);
  });
});

describe('checker', () => {
  it('catches two leaders in one term', () => {
    const c = new Checker();
    c.onRole(1n, 'leader', 3, new LogMirror());
    expect(() => c.onRole(2n, 'leader', 3, new LogMirror())).toThrow(/election safety/);
  });

  it('catches a log-matching violation', () => {
    const c = new Checker();
    const a = new LogMirror();
    a.append([e(1, 1, 'x')]);
    c.onAppend(1n, a.entries, a, undefined, 0, undefined);
    const b = new LogMirror();
    b.append([e(1, 1, 'y')]);
    expect(() => c.onAppend(2n, b.entries, b, undefined, 0, undefined)).toThrow(/log matching/);
  });

  it('catches a leader committing an entry of an earlier term (figure 8)', () => {
    const c = new Checker();
    const log = new LogMirror();
    log.append([e(1, 1), e(2, 3)]);
    expect(() => c.onHardState(1n, { term: 3, vote: 1n, commit: 0 }, { term: 3, vote: 1n, commit: 1 }, log, true)).toThrow(/figure 8/);
  });

  it('catches a new leader missing a committed entry (leader completeness)', () => {
    const c = new Checker();
    const log = new LogMirror();
    log.append([e(1, 2)]);
    c.onHardState(1n, { term: 2, vote: 1n, commit: 0 }, { term: 2, vote: 1n, commit: 1 }, log, true);
    expect(() => c.onRole(2n, 'leader', 3, new LogMirror())).toThrow(/leader completeness/);
  });

  it('catches different applied sequences and commit beyond last index', () => {
    const c = new Checker();
    c.onApply(1n, e(1, 1), 111, 1);
    expect(() => c.onApply(2n, e(1, 1), 222, 1)).toThrow(/state-machine safety/);
    expect(() => c.onHardState(1n, { term: 1, vote: 0n, commit: 0 }, { term: 1, vote: 0n, commit: 5 }, new LogMirror(), false)).toThrow(/last index/);
  });

  it('catches a vote grant or an append ack sent before it is durable, and learner votes', () => {
    const c = new Checker();
    c.everVoters.add(1n);
    c.everVoters.add(2n);
    const durable = new LogMirror();
    const hs = { term: 0, vote: 0n, commit: 0 };
    expect(() => c.onSend(msg(MessageType.VoteResp, 1n, 2n), hs, durable, undefined)).toThrow(/vote before persist/);
    c.onSend(msg(MessageType.VoteResp, 1n, 2n), { term: 1, vote: 2n, commit: 0 }, durable, undefined);
    expect(() => c.onSend(msg(MessageType.AppResp, 1n, 2n, { index: 1 }), hs, durable, 1)).toThrow(/ack before persist/);
    expect(() => c.onSend(msg(MessageType.PreVoteResp, 3n, 2n), hs, durable, undefined)).toThrow(/learner 3 granted/);
    expect(() => c.onSend(msg(MessageType.PreVote, 3n, 2n), hs, durable, undefined)).toThrow(/learner 3 campaigned/);
  });

  it('catches a leader sending appends in a term that is not durable yet', () => {
    const c = new Checker();
    c.everVoters.add(1n);
    const app = msg(MessageType.App, 1n, 2n, { term: 3 });
    expect(() => c.onSend(app, { term: 2, vote: 1n, commit: 0 }, new LogMirror(), undefined)).toThrow(/before that term was durable/);
    c.onSend(app, { term: 3, vote: 1n, commit: 0 }, new LogMirror(), undefined);
  });

  it('catches a stale read and a durable commit going back', () => {
    const c = new Checker();
    c.onApply(1n, e(1, 1), 1, 1);
    c.onApply(1n, e(2, 1), 2, 2);
    c.onReadIssued('r1');
    expect(() => c.onReadState(2n, 'r1', 1)).toThrow(/stale read/);
    c.onReadState(2n, 'r1', 2);
    c.onDurable(1n, { term: 1, vote: 0n, commit: 2 });
    expect(() => c.onDurable(1n, { term: 1, vote: 0n, commit: 1 })).toThrow(/durable commit/);
  });
});
