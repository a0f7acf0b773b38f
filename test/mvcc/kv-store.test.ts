import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MvccError, SortOrder, SortTarget, type Event } from '../../src/mvcc/types.js';
import { b, delReq, FakeLeases, putReq, rangeReq, s, txnReq } from './helpers.js';

async function fresh(): Promise<KvStore> {
  return KvStore.open(new MemoryBackend());
}

function keys(kvs: { key: Uint8Array }[]): string[] {
  return kvs.map((kv) => s(kv.key));
}

describe('KvStore basics', () => {
  it('starts at revision 1 and the first write makes revision 2', async () => {
    const st = await fresh();
    expect(st.revision).toBe(1);
    expect(st.compactRevision).toBe(-1);
    expect(st.put(putReq('a', '1')).revision).toBe(2);
    const r = st.range(rangeReq('a'));
    expect(r.kvs).toHaveLength(1);
    expect(r.kvs[0]).toMatchObject({ createRevision: 2, modRevision: 2, version: 1, lease: 0n });
    expect(r.revision).toBe(2);
  });

  it('tracks versions and create revisions across generations', async () => {
    const st = await fresh();
    st.put(putReq('a', '1'));
    st.put(putReq('a', '2'));
    expect(st.range(rangeReq('a')).kvs[0]).toMatchObject({ createRevision: 2, modRevision: 3, version: 2 });
    expect(st.deleteRange(delReq('a')).deleted).toBe(1);
    st.put(putReq('a', '3'));
    expect(st.range(rangeReq('a')).kvs[0]).toMatchObject({ createRevision: 5, modRevision: 5, version: 1 });
    expect(s(st.range(rangeReq('a', { revision: 3 })).kvs[0]!.value)).toBe('2');
    expect(st.range(rangeReq('a', { revision: 4 })).kvs).toHaveLength(0);
  });

  it('answers ranges, prefixes, from-key, limits, counts and sorts', async () => {
    const st = await fresh();
    for (const k of ['b', 'a', 'c', 'ab', 'd']) st.put(putReq(k, k.toUpperCase()));
    expect(keys(st.range(rangeReq('a', { rangeEnd: b('c') })).kvs)).toEqual(['a', 'ab', 'b']);
    expect(keys(st.range(rangeReq('a', { rangeEnd: b('b') })).kvs)).toEqual(['a', 'ab']);
    expect(keys(st.range(rangeReq('b', { rangeEnd: new Uint8Array([0]) })).kvs)).toEqual(['b', 'c', 'd']);
    const limited = st.range(rangeReq('a', { rangeEnd: new Uint8Array([0]), limit: 2 }));
    expect([keys(limited.kvs), limited.more, limited.count]).toEqual([['a', 'ab'], true, 5]);
    const desc = st.range(rangeReq('a', { rangeEnd: b('z'), sortOrder: SortOrder.Descend, sortTarget: SortTarget.Create, limit: 2 }));
    expect(keys(desc.kvs)).toEqual(['d', 'ab']);
    const cnt = st.range(rangeReq('a', { rangeEnd: b('z'), countOnly: true }));
    expect([cnt.kvs.length, cnt.count]).toEqual([0, 5]);
    expect(st.range(rangeReq('a', { keysOnly: true })).kvs[0]!.value).toHaveLength(0);
    expect(keys(st.range(rangeReq('a', { rangeEnd: b('z'), minModRevision: 4, maxModRevision: 5 })).kvs)).toEqual(['ab', 'c']);
    expect(keys(st.range(rangeReq('c', { rangeEnd: b('a') })).kvs)).toEqual([]);
  });

  it('refuses future and compacted revisions', async () => {
    const st = await fresh();
    st.put(putReq('a', '1'));
    st.put(putReq('a', '2'));
    expect(() => st.range(rangeReq('a', { revision: 9 }))).toThrow(new MvccError('futureRev'));
    st.compact(3);
    expect(() => st.range(rangeReq('a', { revision: 2 }))).toThrow(new MvccError('compacted'));
    expect(s(st.range(rangeReq('a', { revision: 3 })).kvs[0]!.value)).toBe('2');
    expect(() => st.compact(3)).toThrow(new MvccError('compacted'));
    expect(() => st.compact(4)).toThrow(new MvccError('futureRev'));
  });

  it('put options: prevKv, ignoreValue, ignoreLease and their errors', async () => {
    const leases = new FakeLeases();
    const st = await KvStore.open(new MemoryBackend(), { leases });
    expect(() => st.put(putReq('a', '', { ignoreValue: true }))).toThrow(new MvccError('keyNotFound'));
    expect(() => st.put(putReq('a', 'x', { lease: 7n }))).toThrow(new MvccError('leaseNotFound'));
    leases.grant(7n);
    st.put(putReq('a', 'x', { lease: 7n }));
    expect([...leases.leases.get(7n)!]).toEqual(['a']);
    const r = st.put(putReq('a', '', { ignoreValue: true, prevKv: true }));
    expect(s(r.prevKv!.value)).toBe('x');
    expect(st.range(rangeReq('a')).kvs[0]).toMatchObject({ lease: 0n, version: 2 });
    expect(leases.leases.get(7n)!.size).toBe(0);
    st.put(putReq('a', 'y', { lease: 7n }));
    st.put(putReq('a', 'z', { ignoreLease: true }));
    expect(st.range(rangeReq('a')).kvs[0]).toMatchObject({ lease: 7n });
    st.deleteRange(delReq('a'));
    expect(leases.leases.get(7n)!.size).toBe(0);
  });

  it('delete of nothing does not bump the revision', async () => {
    const st = await fresh();
    st.put(putReq('a', '1'));
    expect(st.deleteRange(delReq('x'))).toEqual({ deleted: 0, prevKvs: [], revision: 2 });
    expect(st.revision).toBe(2);
  });
});

describe('onWrite and readEvents', () => {
  it('reports each revision with its events and prevKv', async () => {
    const st = await fresh();
    const seen: [number, Event[]][] = [];
    const off = st.onWrite((rev, events) => seen.push([rev, events]));
    st.put(putReq('a', '1'));
    st.put(putReq('a', '2'));
    st.txn(txnReq({ success: [{ deleteRange: delReq('a') }, { put: putReq('b', '1') }] }));
    st.txn(txnReq({ success: [{ deleteRange: delReq('zz') }] }));
    off();
    st.put(putReq('c', '1'));
    expect(seen.map(([r, e]) => [r, e.length])).toEqual([[2, 1], [3, 1], [4, 2]]);
    const del = seen[2]![1][0]!;
    expect(del.type).toBe(1);
    expect(del.kv).toMatchObject({ modRevision: 4, version: 0, createRevision: 0 });
    expect(s(del.prevKv!.value)).toBe('2');
    const events = st.readEvents(3, 5);
    expect(events.map((e) => [e.type, s(e.kv.key), e.kv.modRevision, e.prevKv ? s(e.prevKv.value) : null])).toEqual([
      [0, 'a', 3, '1'], [1, 'a', 4, '2'], [0, 'b', 4, null], [0, 'c', 5, null],
    ]);
    st.compact(4);
    expect(() => st.readEvents(3, 5)).toThrow(new MvccError('compacted'));
    // The compact revision keeps what compaction kept there (b's put; a's delete is gone, with its generation),
    // without prevKv (it would be read below the compaction), as etcd's watch from the compact revision.
    expect(st.readEvents(4, 5).map((e) => [e.type, s(e.kv.key), e.kv.modRevision, e.prevKv ? s(e.prevKv.value) : null])).toEqual([
      [0, 'b', 4, null], [0, 'c', 5, null],
    ]);
    expect(st.readEvents(5, 5)).toHaveLength(1);
  });

  it('reads the previous value only while a listener wants prevKv, as etcd reads it only for prev_kv', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    let wants = false;
    const seen: Event[] = [];
    st.onWrite((_, events) => seen.push(...events), { wantsPrevKv: () => wants });
    st.put(putReq('a', '1'));
    st.put(putReq('a', '2'));
    st.txn(txnReq({ success: [{ deleteRange: delReq('a') }] }));
    expect(seen.map((e) => e.prevKv)).toEqual([undefined, undefined, undefined]);
    wants = true;
    st.put(putReq('b', '1'));
    st.put(putReq('b', '2'));
    st.txn(txnReq({ success: [{ deleteRange: delReq('b') }] }));
    expect(seen.slice(3).map((e) => (e.prevKv === undefined ? null : s(e.prevKv.value)))).toEqual([null, '1', '2']);
    // A put that asks for prev_kv gets it whatever the listeners want; history always carries it.
    wants = false;
    st.put(putReq('c', '1'));
    expect(s(st.put({ ...putReq('c', '2'), prevKv: true }).prevKv!.value)).toBe('1');
    expect(st.readEvents(4, 4).map((e) => s(e.prevKv!.value))).toEqual(['2']);
  });

  it('a listener without the option always gets prevKv, and unsubscribing one listener keeps the other\'s demand', async () => {
    const st = await fresh();
    const plain: Event[] = [];
    const choosy: Event[] = [];
    const offChoosy = st.onWrite((_, events) => choosy.push(...events), { wantsPrevKv: () => false });
    const offPlain = st.onWrite((_, events) => plain.push(...events));
    st.put(putReq('a', '1'));
    st.put(putReq('a', '2'));
    expect(s(plain[1]!.prevKv!.value)).toBe('1');
    offPlain();
    st.put(putReq('a', '3'));
    expect(choosy[2]!.prevKv).toBeUndefined();
    offChoosy();
  });
});
