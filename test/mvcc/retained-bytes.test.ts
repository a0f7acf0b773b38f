/**
 * Issue 10's guard: bytes the store keeps are its own, never views into a larger shared buffer. Requests
 * arrive as views into decode buffers (msgpackr unpacks a Raft entry's values as views of the entry; gRPC
 * hands out views of its frames); a store that kept them would pin whole buffers per key (once ≈ 9.8 KB of
 * ArrayBuffer per 1 KB key).
 */
import { describe, expect, it } from 'vitest';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { putReq, rangeReq, txnReq } from './helpers.js';

describe('retained bytes', () => {
  it('keeps owned copies of keys and values given as views into a shared buffer', async () => {
    const shared = new Uint8Array(1024 * 1024).fill(0x61);
    const view = (offset: number, length: number): Uint8Array => shared.subarray(offset, offset + length);
    const store = await KvStore.open(new MemoryBackend());
    for (let i = 0; i < 200; i++) {
      const key = new TextEncoder().encode(`k/${i}`);
      shared.set(key, i * 4096);
      store.put({ ...putReq('', ''), key: view(i * 4096, key.length), value: view(i * 4096 + 64, 1000) });
    }
    store.txn(txnReq({ success: [{ put: { ...putReq('', ''), key: view(900_000, 6), value: view(900_100, 5000) } }] }));
    const unflushed = store.retainedBytes();
    expect(unflushed.bytes).toBeGreaterThan(200 * 1000);
    expect(unflushed.backing).toBeLessThanOrEqual(unflushed.bytes * 1.05);
    await store.flush();
    for (let i = 0; i < 200; i++) store.range(rangeReq(`k/${i}`)); // through the cache now
    const cached = store.retainedBytes();
    expect(cached.bytes).toBeGreaterThan(200 * 1000);
    expect(cached.backing).toBeLessThanOrEqual(cached.bytes * 1.05);
  });
});
