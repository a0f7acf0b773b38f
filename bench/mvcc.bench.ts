/**
 * MVCC store throughput and memory, in process, on both backends (MemoryBackend; LevelBackend in a temp dir).
 * Writes are measured in batches of 100 applied entries followed by one flush (one atomic backend batch),
 * so the flush cost is included, as in the server's apply loop. Reads never touch the backend.
 *
 * Expectations (one core of a 2020s x86 server): puts ≥ 100,000/s in memory and ≥ 50,000/s on LevelDB
 * (per put: a key-tree lookup, two small allocations, a protobuf encode of ~130 bytes, and 1/100 of a batch
 * write); single-key ranges ≥ 1,000,000/s (a binary search over 10,000 keys); 100-key prefix ranges
 * ≥ 20,000/s; txns (compare + put + range) ≥ 80,000/s. etcd 3.5 does ~50,000 puts/s per member end to end,
 * bounded by Raft and bbolt, so the store must not be the bottleneck. Memory: ≤ 1,000 bytes per key for a
 * 10-byte key with a 100-byte value and one revision. Where it goes (V8, measured): the value's own
 * Uint8Array + ArrayBuffer ~290 bytes (a typed array over 64 bytes lives off-heap with ~190 bytes of
 * overhead), the key ~120, the KeyValue object ~80, the history entry ~65, the key index and its one-slot
 * array ~90, list slots ~30. etcd keeps ~200 bytes per key in its btree plus the bbolt page cache.
 *
 * Run: npx tsx --expose-gc bench/mvcc.bench.ts
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { prefixEnd, utf8 } from '../src/base/bytes.js';
import type { Backend } from '../src/mvcc/backend.js';
import { KvStore } from '../src/mvcc/kv-store.js';
import { LevelBackend } from '../src/storage/level-backend.js';
import { MemoryBackend } from '../src/mvcc/memory-backend.js';
import type { PutRequest, RangeRequest, TxnRequest } from '../src/mvcc/types.js';

const batch = 100;
const value = utf8('v'.repeat(100));

const put = (key: string): PutRequest => ({ key: utf8(key), value, lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false });
const range = (key: string, end?: Uint8Array): RangeRequest => ({
  key: utf8(key), rangeEnd: end ?? new Uint8Array(0), limit: 0, revision: 0, sortOrder: 0, sortTarget: 0, serializable: false,
  keysOnly: false, countOnly: false, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0,
});
const pad = (n: number, w: number): string => String(n).padStart(w, '0');

async function benchBackend(name: string, backend: Backend): Promise<void> {
  const store = await KvStore.open(backend);
  let index = 0;
  for (let p = 0; p < 100; p++) for (let k = 0; k < 100; k++) store.put(put(`p/${pad(p, 3)}/${pad(k, 3)}`));
  store.setConsistentIndex(++index);
  await store.flush();
  let i = 0;
  const bench = new Bench({ name, time: 1500 });
  bench.add(`${name}: 100 puts + flush`, async () => {
    for (let n = 0; n < batch; n++) {
      store.setConsistentIndex(++index);
      store.put(put(`k/${pad(i++ % 100_000, 6)}`));
    }
    await store.flush();
  });
  bench.add(`${name}: 100 txns (compare, put, range) + flush`, async () => {
    for (let n = 0; n < batch; n++) {
      const key = `t/${pad(i++ % 10_000, 5)}`;
      const txn: TxnRequest = {
        compare: [{ key: utf8(key), rangeEnd: new Uint8Array(0), target: 2, result: 2, modRevision: 1 << 30 }],
        success: [{ put: put(key) }, { range: range(key) }],
        failure: [],
      };
      store.setConsistentIndex(++index);
      store.txn(txn);
    }
    await store.flush();
  });
  bench.add(`${name}: single-key range`, () => {
    store.range(range(`p/${pad(i++ % 100, 3)}/${pad(i % 100, 3)}`));
  });
  bench.add(`${name}: 100-key prefix range`, () => {
    const prefix = `p/${pad(i++ % 100, 3)}/`;
    store.range(range(prefix, prefixEnd(utf8(prefix))));
  });
  await bench.run();
  for (const task of bench.tasks) {
    const r = task.result;
    if (r.state !== 'completed') continue;
    const perOp = task.name.includes('100 ') && task.name.includes('flush') ? batch : 1;
    console.log(`${task.name.padEnd(52)} ${Math.round(r.throughput.mean * perOp).toLocaleString('en-US').padStart(12)} ops/s`);
  }
  await store.idle();
  await backend.close();
}

async function memoryPerKey(keys: number): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const used = (): number => process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
  const before = used();
  const store = await KvStore.open(new MemoryBackend());
  for (let k = 0; k < keys; k++) store.put(put(`key/${pad(k, 6)}`));
  store.buffer.take(); // what flush() hands to the backend is not the store's own memory
  gc?.();
  const after = used();
  console.log(`memory per key (${keys.toLocaleString('en-US')} keys, 10-byte key, 100-byte value, 1 revision, heap + array buffers): ` +
    `${Math.round((after - before) / keys)} bytes${gc ? '' : ' (no --expose-gc: approximate)'}; store holds ${store.keyCount} keys`);
}

async function main(): Promise<void> {
  await memoryPerKey(100_000);
  await benchBackend('memory', new MemoryBackend());
  const dir = await mkdtemp(join(tmpdir(), 'etcetera-bench-'));
  try {
    await benchBackend('leveldb', await LevelBackend.open(dir));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
