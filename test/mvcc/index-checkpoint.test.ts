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

  it('is used when the backend went past its cut: the tail after it is scanned', async () => {
    const { backend, store } = await history();
    const frames = [...store.indexCheckpoint()];
    store.put(putReq('after', 'checkpoint'));
    store.put(putReq('k/5', 'overwritten'));
    store.deleteRange(delReq('k/6'));
    store.setConsistentIndex(43, 3);
    await store.flush();
    const loaded = await KvStore.open(backend, { indexCheckpoint: stream(frames) });
    expect(loaded.loadedFrom).toEqual({ checkpoint: true });
    expect(await snapshotOf(loaded)).toEqual(await snapshotOf(await KvStore.open(backend)));
  });

  it('refuses a checkpoint cut past the backend (a crash before the backend caught up) and scans', async () => {
    const { backend, store } = await history();
    store.put(putReq('after', 'the backend'));
    store.setConsistentIndex(43, 3);
    const frames = [...store.liveIndexCheckpoint()];
    const loaded = await KvStore.open(backend, { indexCheckpoint: stream(frames) });
    expect(loaded.loadedFrom.checkpoint).toBe(false);
    expect(loaded.loadedFrom.reason).toMatch(/ahead of the backend: cut at index 43 \(term 3\), the backend is at 42/);
    expect(loaded.range(rangeReq('after')).kvs).toHaveLength(0);
  });

  it('refuses a checkpoint a compaction passed and scans', async () => {
    const { backend, store } = await history();
    const frames = [...store.indexCheckpoint()];
    store.compact(250);
    store.setConsistentIndex(43, 3);
    await store.flush();
    await store.idle();
    const loaded = await KvStore.open(backend, { indexCheckpoint: stream(frames) });
    expect(loaded.loadedFrom.checkpoint).toBe(false);
    expect(loaded.loadedFrom.reason).toMatch(/cut at compaction 200, the backend's compaction is 250/);
    expect(await snapshotOf(loaded)).toEqual(await snapshotOf(await KvStore.open(backend)));
  });

  it('refuses the former format (ETCIDX01) and scans', async () => {
    const { backend, store } = await history();
    const all = Buffer.concat([...store.indexCheckpoint()]);
    const former = Buffer.from(all);
    former.write('ETCIDX01', 8, 'latin1');
    // The header frame's CRC covers the magic: re-sign it so only the format differs.
    const { crc32c } = await import('../../src/base/crc32c.js');
    former.writeUInt32LE(crc32c(former.subarray(8, 8 + former.readUInt32LE(0))), 4);
    const loaded = await KvStore.open(backend, { indexCheckpoint: stream([former]) });
    expect(loaded.loadedFrom).toEqual({ checkpoint: false, reason: 'an index checkpoint of an older format' });
  });

  it('taken live, with writes between its frames that never reached the backend, loads what the backend holds', async () => {
    const { backend, store } = await history();
    // Two keys a frame: writes land between pulls, before and after the walk reaches their keys.
    const live = store.liveIndexCheckpoint(2);
    const frames: Uint8Array[] = [];
    let i = 0;
    for (const frame of live) {
      frames.push(frame);
      store.put(putReq(`k/${(i * 7) % 50}`, `late${i}`));
      if (i % 5 === 0) store.deleteRange(delReq(`k/${(i * 3) % 50}`));
      store.put(putReq(`new/${i}`, 'x'));
      i++;
    }
    expect(i).toBeGreaterThan(10);
    // The crash: nothing written after the cut reached the backend.
    const loaded = await KvStore.open(backend, { indexCheckpoint: stream(frames) });
    expect(loaded.loadedFrom).toEqual({ checkpoint: true });
    const scanned = await KvStore.open(backend);
    expect(await snapshotOf(loaded)).toEqual(await snapshotOf(scanned));
    // The index's own metadata (version, create revision) shows in the next put of each key.
    for (const s of [loaded, scanned]) for (let k = 0; k < 50; k++) s.put(putReq(`k/${k}`, 'next'));
    expect(await snapshotOf(loaded)).toEqual(await snapshotOf(scanned));
    // And once they did: the same checkpoint, the tail scanned after its cut.
    store.setConsistentIndex(50, 3);
    await store.flush();
    await store.idle();
    const later = await KvStore.open(backend, { indexCheckpoint: stream(frames) });
    expect(later.loadedFrom).toEqual({ checkpoint: true });
    expect(await snapshotOf(later)).toEqual(await snapshotOf(await KvStore.open(backend)));
  });

  it('stops a live checkpoint a compaction ran into', async () => {
    const { store } = await history();
    const live = store.liveIndexCheckpoint(2);
    live.next();
    live.next();
    store.compact(store.revision);
    expect(() => [...live]).toThrow(/compacted while/);
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
