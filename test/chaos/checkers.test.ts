/** The checkers on tiny hand-written histories: each must pass the legal ones and FAIL the broken ones. */
import { describe, expect, it } from 'vitest';
import { checkHistory } from './check.js';
import { checkL1 } from './check-l1.js';
import { checkRevisions } from './check-revisions.js';
import { checkWatches } from './check-watch.js';
import { checkLists } from './check-lists.js';
import { checkLeases } from './leases.js';
import { buildReference } from './reference-log.js';
import { checkLinearizable, type Model } from './porcupine.js';
import { HistoryBuilder, del, kv, put } from './fixtures.js';

const l1 = (b: HistoryBuilder, finalRev?: number) => checkL1(b.h, buildReference(b.h), { finalRev }).violations;

describe('porcupine search', () => {
  // A register: write(v) / read → v.
  const reg: Model<number, { w?: number }, number> = {
    init: () => 0,
    key: (s) => String(s),
    step: (s, i, o) => (i.w !== undefined ? [i.w] : o === s ? [s] : []),
  };
  it('accepts a read concurrent with a write returning either value', () => {
    const ops = [
      { id: 0, input: { w: 1 }, output: 0, call: 1, ret: 4 },
      { id: 1, input: {}, output: 1, call: 2, ret: 3 },
      { id: 2, input: {}, output: 0, call: 2, ret: 3 },
    ];
    expect(checkLinearizable(reg, ops).ok).toBe(true);
  });
  it('refuses a read that goes back after a newer read completed', () => {
    const ops = [
      { id: 0, input: { w: 1 }, output: 0, call: 1, ret: 10 },
      { id: 1, input: {}, output: 1, call: 2, ret: 3 },
      { id: 2, input: {}, output: 0, call: 4, ret: 5 },
    ];
    const r = checkLinearizable(reg, ops);
    expect(r.ok).toBe(false);
  });
  it('gives up (unknown), not a verdict, past its step budget', () => {
    const ops = Array.from({ length: 12 }, (_, i) => ({ id: i, input: { w: i }, output: 0, call: 1, ret: 100 }));
    ops.push({ id: 12, input: {}, output: 99, call: 101, ret: 102 } as never);
    expect(checkLinearizable(reg, ops, 50).ok).toBe('unknown');
  });
});

describe('L1 per-key linearizability', () => {
  it('accepts a sequential create, update, read', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'k', 'a', 2);
    b.update(1, 3, 4, 'k', 2, 'b', 3);
    b.get(1, 5, 6, 'k', kv('k', 'b', 3, 2, 2), 3);
    expect(l1(b)).toEqual([]);
  });
  it('fails a stale read: the old value after the update was acknowledged', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'k', 'a', 2);
    b.update(1, 3, 4, 'k', 2, 'b', 3);
    b.get(2, 5, 6, 'k', kv('k', 'a', 2), 3);
    expect(l1(b).join()).toMatch(/key k is not linearizable/);
  });
  it('fails a lost acknowledged write: the key is absent afterwards', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'k', 'a', 2);
    b.get(2, 3, 4, 'k', null, 2);
    expect(l1(b)).toHaveLength(1);
  });
  it('fails a write acknowledged at a revision the key then does not carry', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'k', 'a', 2);
    b.get(2, 3, 4, 'k', kv('k', 'a', 7), 7);
    expect(l1(b)).toHaveLength(1);
  });
  it('accepts a failed write seen later, and one never seen', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'k', 'a', 2);
    b.update(1, 3, undefined, 'k', 2, 'b', 'fail');
    b.get(2, 5, 6, 'k', kv('k', 'a', 2), 2);
    b.get(2, 7, 8, 'k', kv('k', 'b', 5, 2, 2), 5);
    expect(l1(b)).toEqual([]);
    const c = new HistoryBuilder();
    c.create(1, 1, 2, 'k', 'a', 2);
    c.update(1, 3, undefined, 'k', 2, 'b', 'fail');
    c.get(2, 5, 6, 'k', kv('k', 'a', 2), 2);
    expect(l1(c)).toEqual([]);
  });
  it('fails a failed write that became visible and then vanished', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'k', 'a', 2);
    b.update(1, 3, undefined, 'k', 2, 'b', 'fail');
    b.get(2, 5, 6, 'k', kv('k', 'b', 5, 2, 2), 5);
    b.get(2, 7, 8, 'k', kv('k', 'a', 2), 5);
    expect(l1(b)).toHaveLength(1);
  });
  it('fails a guarded update that succeeded although the revision it compared had changed', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'k', 'a', 2);
    b.update(1, 3, 4, 'k', 2, 'b', 3);
    b.update(2, 5, 6, 'k', 2, 'c', 4);
    expect(l1(b)).toHaveLength(1);
  });
  it('accepts a failed compare whose Range shows the current value, and refuses one showing another', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'k', 'a', 2);
    b.op(2, 3, 4, { type: 'txn', key: 'k', cmpModRev: 0, action: 'put', value: 'x' }, { type: 'txn', succeeded: false, rev: 2, kv: kv('k', 'a', 2) });
    expect(l1(b)).toEqual([]);
    b.op(2, 5, 6, { type: 'txn', key: 'k', cmpModRev: 0, action: 'put', value: 'y' }, { type: 'txn', succeeded: false, rev: 2, kv: kv('k', 'zz', 2) });
    expect(l1(b)).toHaveLength(1);
  });
  it('drops a failed write the complete final history never saw, and resolves one it saw', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'k', 'a', 2);
    b.update(1, 3, undefined, 'k', 2, 'b', 'fail');
    b.update(1, 4, undefined, 'k', 2, 'c', 'fail');
    b.watch({ startRev: 1 }, [{ headerRev: 2, events: [put(kv('k', 'a', 2))] }, { headerRev: 3, events: [put(kv('k', 'c', 3, 2, 2), kv('k', 'a', 2))] }, { headerRev: 3, progress: true }]);
    const r = checkL1(b.h, buildReference(b.h), { finalRev: 3 });
    expect(r).toMatchObject({ violations: [], resolved: 1, dropped: 1 });
  });
});

describe('L5 and revision order', () => {
  it('fails a client whose header revision goes back', () => {
    const b = new HistoryBuilder();
    b.get(1, 1, 2, 'k', null, 5);
    b.get(1, 3, 4, 'j', null, 4);
    expect(checkRevisions(b.h).join()).toMatch(/L5 client 1/);
  });
  it('fails a response whose kv is newer than its header', () => {
    const b = new HistoryBuilder();
    b.get(1, 1, 2, 'k', kv('k', 'a', 6), 5);
    expect(checkRevisions(b.h).join()).toMatch(/mod_revision 6 above/);
  });
  it('fails a read on another key that started after a write completed but reports an older revision', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'x', 'a', 10);
    b.get(2, 3, 4, 'y', null, 8);
    expect(checkRevisions(b.h).join()).toMatch(/stale revision/);
    const ok = new HistoryBuilder();
    ok.create(1, 1, 4, 'x', 'a', 10);
    ok.get(2, 2, 3, 'y', null, 8);
    expect(checkRevisions(ok.h)).toEqual([]);
  });
  it('fails two acknowledged writes at one revision', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'x', 'a', 10);
    b.create(2, 1, 2, 'y', 'b', 10);
    expect(checkRevisions(b.h).join()).toMatch(/two acknowledged writes/);
  });
});

describe('L4 watch guarantees', () => {
  const good = (b: HistoryBuilder) => {
    b.create(1, 1, 2, 'k', 'a', 2);
    b.update(1, 3, 4, 'k', 2, 'b', 3);
    b.op(1, 5, 6, { type: 'txn', key: 'k', cmpModRev: 3, action: 'delete', value: '' }, { type: 'txn', succeeded: true, rev: 4 });
  };
  const events = [put(kv('k', 'a', 2)), put(kv('k', 'b', 3, 2, 2), kv('k', 'a', 2)), del('k', 4, kv('k', 'b', 3, 2, 2))];
  const check = (b: HistoryBuilder) => checkWatches(b.h.watches, buildReference(b.h));

  it('accepts an ordered, complete session with correct prev_kv', () => {
    const b = new HistoryBuilder();
    good(b);
    b.watch({ startRev: 1 }, [{ headerRev: 2, events: [events[0]!] }, { headerRev: 4, events: [events[1]!, events[2]!] }, { headerRev: 4, progress: true }]);
    expect(check(b)).toEqual([]);
  });
  it('fails a gap: an acknowledged write missing from a session that got past it', () => {
    const b = new HistoryBuilder();
    good(b);
    b.watch({ startRev: 1 }, [{ headerRev: 4, events: [events[0]!, events[2]!] }]);
    expect(check(b).join()).toMatch(/missed put k@3/);
  });
  it('fails a duplicate, an out-of-order event and an event at or below a progress notification', () => {
    const b = new HistoryBuilder();
    good(b);
    b.watch({ startRev: 1 }, [{ headerRev: 3, events: [events[0]!, events[1]!] }, { headerRev: 3, events: [events[1]!] }]);
    b.watch({ startRev: 1 }, [{ headerRev: 4, events: [events[1]!] }, { headerRev: 4, events: [events[0]!] }]);
    b.watch({ startRev: 1 }, [{ headerRev: 3, progress: true }, { headerRev: 3, events: [events[1]!] }]);
    const v = check(b).join('\n');
    expect(v).toMatch(/watch 0: event 3\/k delivered twice/);
    expect(v).toMatch(/watch 1: event at 2 after one at 3/);
    expect(v).toMatch(/watch 2: event at 3 after a progress notification at 3/);
  });
  it('fails a revision split over two responses, unless marked as a fragment', () => {
    const b = new HistoryBuilder();
    b.op(1, 1, 2, { type: 'leasePut', key: 'a', value: 'x', lease: '1' }, { type: 'put', rev: 2 });
    const e1 = del('a', 3, kv('a', 'x', 2));
    const e2 = del('b', 3);
    b.watch({ startRev: 3, prevKv: false }, [{ headerRev: 3, events: [e1] }, { headerRev: 3, events: [e2] }]);
    b.watch({ startRev: 3, prevKv: false }, [{ headerRev: 3, events: [e1], fragment: true }, { headerRev: 3, events: [e2] }]);
    expect(check(b)).toEqual(['L4 watch 0: revision 3 split over two responses (not atomic)']);
  });
  it('fails a wrong or missing prev_kv', () => {
    const b = new HistoryBuilder();
    good(b);
    b.watch({ startRev: 1 }, [{ headerRev: 4, events: [events[0]!, put(kv('k', 'b', 3, 2, 2), kv('k', 'zz', 2)), del('k', 4)] }]);
    const v = check(b).join('\n');
    expect(v).toMatch(/prev_kv zz@2, expected a@2/);
    expect(v).toMatch(/del.*prev_kv missing|delete k@4: prev_kv missing/);
  });
  it('fails a watch canceled as compacted above its start or without any compaction', () => {
    const b = new HistoryBuilder();
    b.op(1, 1, 2, { type: 'compact', revision: 5 }, { type: 'compact', rev: 9 });
    b.watch({ startRev: 3, compactRev: 5 }, []);
    b.watch({ startRev: 6, compactRev: 5 }, []);
    b.watch({ startRev: 3, compactRev: 8 }, []);
    const v = checkHistory(b.h).violations.join('\n');
    expect(v).not.toMatch(/watch 0/);
    expect(v).toMatch(/watch 1 from 6 canceled as compacted at 5/);
    expect(v).toMatch(/watch 2 canceled as compacted at 8, but no compaction reached it/);
  });
  it('fails two watchers that disagree about one revision', () => {
    const b = new HistoryBuilder();
    b.watch({ startRev: 1 }, [{ headerRev: 2, events: [put(kv('k', 'a', 2))] }]);
    b.watch({ startRev: 1 }, [{ headerRev: 2, events: [put(kv('k', 'other', 2))] }]);
    expect(check(b).join()).toMatch(/disagreement at rev 2/);
  });
});

describe('L6 list-then-watch', () => {
  function base(b: HistoryBuilder) {
    b.create(1, 1, 2, '/p/a', 'a', 2);
    b.create(1, 3, 4, '/p/b', 'b', 3);
    b.watch({ startRev: 1 }, [{ headerRev: 2, events: [put(kv('/p/a', 'a', 2))] }, { headerRev: 3, events: [put(kv('/p/b', 'b', 3))] }, { headerRev: 3, progress: true }]);
  }
  const list = (b: HistoryBuilder, rev: number, kvs: ReturnType<typeof kv>[], count = kvs.length) =>
    b.op(2, 10, 11, { type: 'list', prefix: '/p/', limit: 1 }, { type: 'list', rev, kvs, count, pages: kvs.length, pageRevs: kvs.map(() => 3) });

  it('accepts lists and counts that match the history, and a reflector that converges', () => {
    const b = new HistoryBuilder();
    base(b);
    const l = list(b, 2, [kv('/p/a', 'a', 2)]);
    b.op(2, 12, 13, { type: 'count', prefix: '/p/' }, { type: 'count', rev: 3, count: 2 });
    b.watch({ startRev: 3, key: '/p/', rangeEnd: '/p0', listOp: l.id }, [{ headerRev: 3, events: [put(kv('/p/b', 'b', 3))] }]);
    list(b, 3, [kv('/p/a', 'a', 2), kv('/p/b', 'b', 3)]);
    expect(checkLists(b.h, buildReference(b.h))).toEqual([]);
  });
  it('fails a list missing a key, a wrong count, and a reflector that does not converge', () => {
    const b = new HistoryBuilder();
    base(b);
    list(b, 3, [kv('/p/a', 'a', 2)]);
    b.op(2, 12, 13, { type: 'count', prefix: '/p/' }, { type: 'count', rev: 3, count: 1 });
    const l = list(b, 2, [kv('/p/a', 'a', 2)]);
    b.watch({ startRev: 3, key: '/p/', rangeEnd: '/p0', listOp: l.id }, [{ headerRev: 3, progress: true }]);
    list(b, 3, [kv('/p/a', 'a', 2), kv('/p/b', 'b', 3)]);
    const v = checkLists(b.h, buildReference(b.h)).join('\n');
    expect(v).toMatch(/list #2 of \/p\/ at 3: missing \["\/p\/b"\]/);
    expect(v).toMatch(/count #3 .*: 1, the history has 2/);
    expect(v).toMatch(/reflector from list #4 at 3 vs list #5: missing \["\/p\/b"\]/);
  });
});

describe('kept leases', () => {
  it('fails a lease key deleted before its last acknowledged renewal ran out, and accepts a later expiry', () => {
    const b = new HistoryBuilder();
    b.h.leases = [{ id: '7', key: 'l', ttlSeconds: 3, renewals: [{ sentMs: 1000, ttlSeconds: 3 }, { sentMs: 2000, ttlSeconds: 3 }] }];
    b.watch({ startRev: 1, prevKv: false }, [{ headerRev: 2, events: [del('l', 2)] }]);
    b.h.watches[0]!.responses[0]!.atMs = 4500;
    expect(checkLeases(b.h)).toEqual(['lease 7 (l) revoked 500 ms early: renewed for 3 s by a request sent at 2000, delete seen at 4500']);
    b.h.watches[0]!.responses[0]!.atMs = 5000;
    expect(checkLeases(b.h)).toEqual([]);
  });
});

describe('checkHistory', () => {
  it('runs every checker and reports statistics', () => {
    const b = new HistoryBuilder();
    b.create(1, 1, 2, 'k', 'a', 2);
    b.watch({ startRev: 1 }, [{ headerRev: 2, events: [put(kv('k', 'a', 2))] }, { headerRev: 2, progress: true }]);
    const r = checkHistory(b.h, { finalRev: 2 });
    expect(r.violations).toEqual([]);
    expect(r.stats).toMatchObject({ l1Keys: 1, events: 1, completeThrough: 2 });
  });
});
