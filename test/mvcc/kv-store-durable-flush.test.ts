/**
 * W12 with entries applied before the Raft log holds them durably (RaftConfig.applyUnstable): a flush writes
 * the effects of entries up to the durable index only, with that index as the consistent index, so a crash
 * never leaves the backend claiming entries the log lacks; the rest waits in memory for the next flush.
 */
import { describe, expect, it } from 'vitest';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { b, putReq, rangeReq, s } from './helpers.js';

/** Apply entries `from`..`to` of `term`; entry i puts k<i> unless listed in `empty`. */
function applyEntries(st: KvStore, from: number, to: number, term = 1, empty: number[] = []): void {
  for (let i = from; i <= to; i++) {
    st.setConsistentIndex(i, term);
    if (!empty.includes(i)) st.put(putReq(`k${i}`, `v${i}`));
  }
}

async function persisted(backend: MemoryBackend): Promise<{ index: number; keys: string[] }> {
  const st = await KvStore.open(backend);
  const keys = st.range(rangeReq('k', { rangeEnd: b('l') })).kvs.map((kv) => s(kv.key)).sort();
  return { index: st.consistentIndex, keys };
}

describe('flushes capped at the durable log index', () => {
  it('writes only the entries up to the durable index; the rest follows once the log is durable', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    st.setDurableIndex(3);
    applyEntries(st, 1, 5);
    await st.flush();
    expect(await persisted(backend)).toEqual({ index: 3, keys: ['k1', 'k2', 'k3'] });
    // What waits is still served from memory.
    expect(s(st.range(rangeReq('k5')).kvs[0]!.value)).toBe('v5');
    st.setDurableIndex(5);
    await st.flush();
    expect(await persisted(backend)).toEqual({ index: 5, keys: ['k1', 'k2', 'k3', 'k4', 'k5'] });
  });

  it('writes nothing while the log is durable below every applied entry', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    st.setDurableIndex(0);
    applyEntries(st, 1, 4);
    await st.flush();
    expect(await persisted(backend)).toEqual({ index: 0, keys: [] });
    expect(await st.flushDurable()).toBe(0);
  });

  it('entries that buffered nothing: the consistent index reaches the durable index within the same term', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    st.setDurableIndex(6);
    applyEntries(st, 1, 10, 1, [3, 4, 5, 6, 7]);
    expect(await st.flushDurable()).toBe(6);
    expect(await persisted(backend)).toEqual({ index: 6, keys: ['k1', 'k2'] });
    st.setDurableIndex(10);
    expect(await st.flushDurable()).toBe(10);
    expect((await persisted(backend)).keys).toEqual(['k1', 'k10', 'k2', 'k8', 'k9']);
  });

  it('across a term change inside a run of empty entries it still reaches the durable index', async () => {
    // A run of empty entries is cut where the term changes, so the term at the durable index is known. Once
    // it stopped at the run's start (2 here), and a snapshot due at the durable index found the backend behind
    // it ('backend durable to 104, behind the snapshot at 105': production-node seed 2169).
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    st.setDurableIndex(4);
    applyEntries(st, 1, 2, 1);
    applyEntries(st, 3, 6, 2, [3, 4, 5]);
    expect(await st.flushDurable()).toBe(4);
    const reopened = await persisted(backend);
    expect(reopened.index).toBe(4);
    expect(reopened.keys).toEqual(['k1', 'k2']);
    expect((await KvStore.open(backend)).consistentIndex).toBe(4);
  });

  it("a compaction applied beyond the durable index is neither persisted nor started", async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    st.setDurableIndex(3);
    applyEntries(st, 1, 3);
    st.setConsistentIndex(4, 1);
    const { physicalDone } = st.compact(3);
    let done = false;
    void physicalDone.then(() => (done = true));
    await st.flush();
    await st.idle();
    expect(done).toBe(false);
    expect((await KvStore.open(backend)).compactRevision).toBe(-1);
    st.setDurableIndex(4);
    await st.flush();
    await physicalDone;
    expect((await KvStore.open(backend)).compactRevision).toBe(3);
  });

  it('HashKV counts the writes held back as well as the flushed ones', async () => {
    const st = await KvStore.open(new MemoryBackend());
    st.setDurableIndex(2);
    applyEntries(st, 1, 5);
    await st.flush();
    const held = await st.hashKV(0);
    st.setDurableIndex(5);
    await st.flush();
    expect(await st.hashKV(0)).toEqual(held);
  });

  it('a store no log drives flushes everything applied', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    applyEntries(st, 1, 3);
    await st.flush();
    expect(await persisted(backend)).toEqual({ index: 3, keys: ['k1', 'k2', 'k3'] });
  });
});

describe('backlog: applied state not yet in the backend (issue 22)', () => {
  it('counts the write buffer and the flush batches a slow backend has not written, until it writes them', async () => {
    const backend = new MemoryBackend();
    const st = await KvStore.open(backend);
    st.setDurableIndex(100);
    const write = backend.write.bind(backend);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    backend.write = async (ops, options) => {
      await gate;
      return write(ops, options);
    };
    expect(st.backlogBytes).toBe(0);
    applyEntries(st, 1, 50);
    const buffered = st.backlogBytes;
    // 50 puts of a 2-3 byte key and value: the ops' own overhead dominates, and is counted.
    expect(buffered).toBeGreaterThan(50 * 100);
    const first = st.flush();
    applyEntries(st, 51, 60);
    const second = st.flush();
    // Both batches are queued behind the stalled write: nothing was released by taking the buffer.
    expect(st.backlogBytes).toBeGreaterThan(buffered);
    release();
    await Promise.all([first, second]);
    expect(st.backlogBytes).toBe(0);
  });
});
