/** etcd's Txn, compaction, persistence, snapshot and quota semantics, case by case. */
import { describe, expect, it } from 'vitest';
import { AlarmStore } from '../../src/mvcc/alarms.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { CompareResult, CompareTarget, MvccError } from '../../src/mvcc/types.js';
import { b, cmp, delReq, FakeLeases, putReq, rangeReq, s, txnReq } from './helpers.js';

describe('Txn', () => {
  it('takes one revision for all its writes, with sub-revisions, and reads see earlier writes', async () => {
    const st = await KvStore.open(new MemoryBackend());
    st.put(putReq('a', '1'));
    const r = st.txn(txnReq({
      success: [{ put: putReq('b', '1') }, { range: rangeReq('a', { rangeEnd: b('z') }) }, { deleteRange: delReq('a') }, { range: rangeReq('a', { rangeEnd: b('z') }) }],
    }));
    expect(r.revision).toBe(3);
    const [put, before, del, after] = r.responses as [any, any, any, any];
    expect(put.put.revision).toBe(3);
    expect([before.range.count, before.range.revision]).toEqual([2, 3]);
    expect(del.deleteRange).toMatchObject({ deleted: 1, revision: 3 });
    expect(after.range.kvs.map((kv: any) => s(kv.key))).toEqual(['b']);
    expect(st.readEvents(3, 3).map((e) => [e.type, s(e.kv.key)])).toEqual([[0, 'b'], [1, 'a']]);
  });

  it('evaluates nested compares against the state before the txn', async () => {
    const st = await KvStore.open(new MemoryBackend());
    const r = st.txn(txnReq({
      success: [
        { put: putReq('k', 'v') },
        { txn: txnReq({ compare: [cmp('k', CompareTarget.Version, CompareResult.Equal, { version: 0 })], success: [{ put: putReq('saw-nothing', '1') }] }) },
      ],
    }));
    expect((r.responses[1] as any).txn).toEqual({ succeeded: true, responses: [{ put: { revision: 2 } }], revision: 0 });
    expect(st.range(rangeReq('saw-nothing')).count).toBe(1);
  });

  it('compares a missing key as zero, except VALUE which always fails', async () => {
    const st = await KvStore.open(new MemoryBackend());
    const ok = (c: ReturnType<typeof cmp>): boolean => st.txn(txnReq({ compare: [c] })).succeeded;
    expect(ok(cmp('x', CompareTarget.Version, CompareResult.Equal, { version: 0 }))).toBe(true);
    expect(ok(cmp('x', CompareTarget.Create, CompareResult.Less, { createRevision: 1 }))).toBe(true);
    expect(ok(cmp('x', CompareTarget.Value, CompareResult.Equal, { value: new Uint8Array(0) }))).toBe(false);
    expect(ok(cmp('x', CompareTarget.Value, CompareResult.NotEqual, { value: b('q') }))).toBe(false);
    st.put(putReq('x1', 'a'));
    st.put(putReq('x2', 'b'));
    const range = (c: ReturnType<typeof cmp>): ReturnType<typeof cmp> => ({ ...c, rangeEnd: b('x3') });
    expect(ok(range(cmp('x1', CompareTarget.Value, CompareResult.Greater, { value: b('0') })))).toBe(true);
    expect(ok(range(cmp('x1', CompareTarget.Value, CompareResult.Equal, { value: b('a') })))).toBe(false);
    expect(ok(range(cmp('x1', CompareTarget.Mod, CompareResult.Greater, { modRevision: 1 })))).toBe(true);
    expect(ok(cmp('x1', CompareTarget.Lease, CompareResult.Equal, { lease: 0n }))).toBe(true);
  });

  it('does not bump the revision when nothing changed', async () => {
    const st = await KvStore.open(new MemoryBackend());
    st.put(putReq('a', '1'));
    const r = st.txn(txnReq({ success: [{ deleteRange: delReq('nope') }, { range: rangeReq('a') }] }));
    expect([r.revision, st.revision]).toEqual([2, 2]);
    expect((r.responses[0] as any).deleteRange.revision).toBe(2);
  });

  it('refuses before writing: missing lease, missing key, future range', async () => {
    const leases = new FakeLeases();
    const st = await KvStore.open(new MemoryBackend(), { leases });
    const failing = [
      [{ put: putReq('a', '1') }, { put: putReq('b', '1', { lease: 9n }) }],
      [{ put: putReq('a', '1') }, { put: putReq('b', '', { ignoreValue: true }) }],
      [{ put: putReq('a', '1') }, { range: rangeReq('a', { revision: 99 }) }],
      [{ deleteRange: delReq('a', '\0') }, { put: putReq('b', '', { ignoreValue: true }) }],
    ];
    st.put(putReq('b', 'x'));
    const codes = failing.map((success) => {
      try {
        st.txn(txnReq({ success }));
        return 'ok';
      } catch (err) {
        return (err as MvccError).code;
      }
    });
    expect(codes).toEqual(['leaseNotFound', 'ok', 'futureRev', 'keyNotFound']);
    // Only the second txn (b exists) applied.
    expect(st.revision).toBe(3);
  });
});

describe('compaction and persistence', () => {
  it('persists the compaction, deletes from the backend in chunks, and restarts at the consistent index', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    for (let i = 0; i < 2500; i++) {
      st.setConsistentIndex(i + 1);
      st.put(putReq(`k${i % 10}`, `${i}`));
    }
    await st.flush();
    const before = await backend.sizeBytes();
    st.setConsistentIndex(2501);
    const { physicalDone } = st.compact(2000);
    expect(st.range(rangeReq('k', { rangeEnd: b('l'), countOnly: true })).count).toBe(10);
    await st.flush();
    await physicalDone;
    expect(await backend.sizeBytes()).toBeLessThan(before / 4);
    st.setConsistentIndex(2502);
    st.put(putReq('unflushed', 'x'));
    const reopened = await KvStore.open(backend.clone());
    expect([reopened.consistentIndex, reopened.revision, reopened.compactRevision]).toEqual([2501, 2501, 2000]);
    expect(() => reopened.range(rangeReq('k1', { revision: 1999 }))).toThrow(new MvccError('compacted'));
    // Put i made revision i + 2: at 2000 the latest k9 is i = 1989.
    expect(s(reopened.range(rangeReq('k9', { revision: 2000 })).kvs[0]!.value)).toBe('1989');
    expect(await reopened.hash()).toEqual({ ...(await st.hashKV(2501)) });
  });

  it('keeps the revision when compaction removed every entry', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    st.put(putReq('a', '1'));
    st.deleteRange(delReq('a'));
    const { physicalDone } = st.compact(3);
    await st.flush();
    await physicalDone;
    const reopened = await KvStore.open(backend.clone());
    expect([reopened.revision, reopened.compactRevision, reopened.keyCount]).toEqual([3, 3, 0]);
    expect(reopened.put(putReq('a', '2')).revision).toBe(4);
  });

  it('re-runs a compaction that was scheduled but not finished', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    st.put(putReq('a', '1'));
    st.put(putReq('a', '2'));
    st.compact(3).physicalDone.catch(() => {});
    const flushed = st.flush();
    const crashed = backend.clone(); // before the flush's batch ran: nothing of it survives
    await flushed;
    const midway = backend.clone(); // the flush landed, the deletes may not have
    expect((await KvStore.open(crashed)).compactRevision).toBe(-1);
    const reopened = await KvStore.open(midway);
    expect(reopened.compactRevision).toBe(3);
    await reopened.idle();
    let entries = 0;
    for await (const _ of midway.scan('key')) entries++;
    expect(entries).toBe(1);
  });

  it('flushes in call order while apply goes on', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    const flushes: Promise<void>[] = [];
    for (let i = 1; i <= 50; i++) {
      st.setConsistentIndex(i);
      st.put(putReq(`k${i}`, 'v'));
      flushes.push(st.flush());
    }
    await Promise.all(flushes);
    const reopened = await KvStore.open(backend.clone());
    expect([reopened.consistentIndex, reopened.revision, reopened.keyCount]).toEqual([50, 51, 50]);
  });
});

describe('snapshots', () => {
  it('export a point-in-time copy of every bucket and import it elsewhere', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    const alarms = await AlarmStore.load(backend, st.buffer);
    st.setConsistentIndex(7);
    st.put(putReq('a', '1'));
    st.put(putReq('b', '2'));
    alarms.activate(5n, 'NOSPACE');
    st.buffer.put('members', b('m1'), b('peer'));
    const exported = await st.exportSnapshot();
    const parts: Uint8Array[] = [];
    for await (const chunk of exported.chunks()) parts.push(chunk);
    await exported.view.close();
    const data = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (data.set(p, at), at + p.length), 0);
    expect(exported.consistentIndex).toBe(7);
    st.put(putReq('c', 'after the snapshot'));
    const target = new MemoryBackend();
    await target.write([{ type: 'put', bucket: 'key', key: b('junk'), value: b('x') }]);
    const imported = await KvStore.importSnapshot(target, data);
    expect([imported.consistentIndex, imported.revision, imported.keyCount]).toEqual([7, 3, 2]);
    expect((await AlarmStore.load(target, imported.buffer)).list()).toEqual([{ memberId: 5n, alarm: 'NOSPACE' }]);
    expect(await target.get('members', b('m1'))).toEqual(b('peer'));
    const corrupt = data.slice();
    corrupt[20]! ^= 1;
    await expect(KvStore.importSnapshot(new MemoryBackend(), corrupt)).rejects.toThrow(/checksum/);
    await expect(KvStore.importSnapshot(new MemoryBackend(), data.subarray(0, data.length - 3))).rejects.toThrow(/invalid snapshot/);
  });
});

describe('alarms and quota', () => {
  it('raise, list, clear and persist alarms per member', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    const alarms = await AlarmStore.load(backend, st.buffer);
    expect(alarms.activate(2n, 'CORRUPT')).toEqual({ memberId: 2n, alarm: 'CORRUPT' });
    alarms.activate(1n, 'NOSPACE');
    alarms.activate(1n, 'NOSPACE');
    expect(alarms.list()).toEqual([{ memberId: 1n, alarm: 'NOSPACE' }, { memberId: 2n, alarm: 'CORRUPT' }]);
    expect(alarms.list('CORRUPT')).toEqual([{ memberId: 2n, alarm: 'CORRUPT' }]);
    expect(alarms.deactivate(3n, 'NOSPACE')).toBeUndefined();
    await st.flush();
    expect(alarms.deactivate(1n, 'NOSPACE')).toEqual({ memberId: 1n, alarm: 'NOSPACE' });
    expect((await AlarmStore.load(backend, st.buffer)).list()).toHaveLength(2);
    await st.flush();
    expect((await AlarmStore.load(backend, st.buffer)).list()).toEqual([{ memberId: 2n, alarm: 'CORRUPT' }]);
  });

  it('reports over-quota writes', async () => {
    const st = await KvStore.open(new MemoryBackend(), { quotaBackendBytes: 10_000 });
    expect(st.overQuota(100)).toBe(false);
    for (let i = 0; i < 50; i++) st.put(putReq(`k${i}`, 'x'.repeat(200)));
    expect(st.overQuota(100)).toBe(true);
    expect((await KvStore.open(new MemoryBackend(), { quotaBackendBytes: -1 })).overQuota(1e15)).toBe(false);
  });
});

describe('lease hooks', () => {
  it('attach every live leased key when installed at open', async () => {
    const backend = new MemoryBackend();
    const leases = new FakeLeases();
    leases.grant(3n);
    const st = await KvStore.open(backend, { leases });
    st.put(putReq('a', '1', { lease: 3n }));
    st.put(putReq('b', '1', { lease: 3n }));
    st.deleteRange(delReq('b'));
    await st.flush();
    const fresh = new FakeLeases();
    fresh.grant(3n);
    await KvStore.open(backend.clone(), { leases: fresh });
    expect([...fresh.leases.get(3n)!]).toEqual(['a']);
  });
});
