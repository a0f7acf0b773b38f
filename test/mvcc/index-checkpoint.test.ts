/**
 * The key index saved at a clean stop: a store opened from it answers exactly as one opened by scanning the
 * backend; a stale, damaged or foreign checkpoint is refused and the store scans instead.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { b, delReq, FakeLeases, putReq, rangeReq, txnReq } from './helpers.js';

async function* stream(frames: Iterable<Uint8Array>, chunkBytes = 7): AsyncIterable<Uint8Array> {
  // Re-chunked at an odd size so frames straddle chunk boundaries, as file reads do.
  const all = Buffer.concat([...frames]);
  for (let i = 0; i < all.length; i += chunkBytes) yield all.subarray(i, i + chunkBytes);
}

async function history(): Promise<{ backend: MemoryBackend; store: KvStore }> {
  const backend = new MemoryBackend();
  const leases = new FakeLeases();
  leases.grant(7n);
  const store = await KvStore.open(backend, { leases });
  for (let i = 0; i < 300; i++) store.put(putReq(`k/${i % 50}`, `v${i}`));
  store.put(putReq('leased', 'x', { lease: 7n }));
  store.deleteRange(delReq('k/1'));
  store.deleteRange(delReq('k/2', 'k/3'));
  store.txn(txnReq({ success: [{ put: putReq('k/2', 'again') }] }));
  store.compact(200);
  for (let i = 0; i < 20; i++) store.put(putReq(`late/${i}`, `w${i}`));
  store.setConsistentIndex(42, 3);
  await store.flush();
  await store.idle();
  return { backend, store };
}

async function snapshotOf(store: KvStore): Promise<unknown> {
  const all = store.range(rangeReq(b('\0'), { rangeEnd: b('\0') }));
  const old = store.range(rangeReq(b('\0'), { rangeEnd: b('\0'), revision: 250 }));
  return { all: all.kvs, count: all.count, old: old.kvs, rev: store.revision, compact: store.compactRevision, hash: await store.hashKV(0), keys: store.keyCount };
}

describe('index checkpoint', () => {
  it('loads the same index a scan builds, in any chunking', async () => {
    const { backend, store } = await history();
    const frames = [...store.indexCheckpoint()];
    const scanned = await KvStore.open(backend);
    for (const chunk of [7, 4096, 1 << 20]) {
      const loaded = await KvStore.open(backend, { indexCheckpoint: stream(frames, chunk) });
      expect(loaded.loadedFrom).toEqual({ checkpoint: true });
      expect(await snapshotOf(loaded)).toEqual(await snapshotOf(scanned));
      // Still a working store: writes continue from the same revision.
      expect(loaded.put(putReq('k/3', 'next')).revision).toBe(scanned.revision + 1);
    }
  });

  it('keeps leases attached', async () => {
    const { backend, store } = await history();
    const leases = new FakeLeases();
    leases.grant(7n);
    await KvStore.open(backend, { leases, indexCheckpoint: stream(store.indexCheckpoint()) });
    expect([...leases.leases.get(7n)!]).toEqual(['leased']);
  });

  it('refuses a checkpoint written at another consistent index and scans', async () => {
    const { backend, store } = await history();
    const frames = [...store.indexCheckpoint()];
    store.put(putReq('after', 'checkpoint'));
    store.setConsistentIndex(43, 3);
    await store.flush();
    const loaded = await KvStore.open(backend, { indexCheckpoint: stream(frames) });
    expect(loaded.loadedFrom.checkpoint).toBe(false);
    expect(loaded.loadedFrom.reason).toMatch(/stale: written at index 42/);
    expect(loaded.range(rangeReq('after')).kvs).toHaveLength(1);
  });

  it('refuses a damaged checkpoint and scans', async () => {
    const { backend, store } = await history();
    const all = Buffer.concat([...store.indexCheckpoint()]);
    const expected = await snapshotOf(await KvStore.open(backend));
    for (const damage of [(x: Buffer) => { x[x.length >>> 1]! ^= 0x40; }, (x: Buffer) => x.subarray(0, x.length - 9)]) {
      const copy = Buffer.from(all);
      const damaged = damage(copy) ?? copy;
      const loaded = await KvStore.open(backend, { indexCheckpoint: stream([damaged]) });
      expect(loaded.loadedFrom.checkpoint).toBe(false);
      expect(await snapshotOf(loaded)).toEqual(expected);
    }
  });

  it('cannot be taken with writes not yet flushed', async () => {
    const { store } = await history();
    store.put(putReq('unflushed', '1'));
    expect(() => [...store.indexCheckpoint()]).toThrow(/unflushed/);
  });
});
