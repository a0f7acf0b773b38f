/** One suite, every Backend adapter (the port's contract). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/mvcc/backend.js';
import { LevelBackend } from '../../src/storage/level-backend.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

interface Adapter {
  name: string;
  /** A fresh backend and a way to reopen the same storage after closing it. */
  create(): Promise<{ backend: Backend; reopen: () => Promise<Backend> }>;
}

const adapters: Adapter[] = [
  {
    name: 'MemoryBackend',
    async create() {
      const backend = new MemoryBackend();
      return { backend, reopen: async () => backend.clone() };
    },
  },
  {
    name: 'LevelBackend',
    async create() {
      const dir = await mkdtemp(join(tmpdir(), 'etcetera-backend-'));
      dirs.push(dir);
      return { backend: await LevelBackend.open(dir), reopen: () => LevelBackend.open(dir) };
    },
  },
];

const u = (...bytes: number[]): Uint8Array => new Uint8Array(bytes);

async function collect(it: AsyncIterable<[Uint8Array, Uint8Array]>): Promise<[number[], number[]][]> {
  const out: [number[], number[]][] = [];
  for await (const [k, v] of it) out.push([[...k], [...v]]);
  return out;
}

describe.each(adapters)('$name conforms to the Backend port', (adapter) => {
  it('puts, gets and deletes within a bucket; buckets are separate', async () => {
    const { backend } = await adapter.create();
    await backend.write([
      { type: 'put', bucket: 'key', key: u(1), value: u(10) },
      { type: 'put', bucket: 'meta', key: u(1), value: u(20) },
    ]);
    expect(await backend.get('key', u(1))).toEqual(u(10));
    expect(await backend.get('meta', u(1))).toEqual(u(20));
    expect(await backend.get('lease', u(1))).toBeUndefined();
    await backend.write([{ type: 'del', bucket: 'key', key: u(1) }, { type: 'del', bucket: 'key', key: u(9) }]);
    expect(await backend.get('key', u(1))).toBeUndefined();
    expect(await backend.get('meta', u(1))).toEqual(u(20));
    await backend.close();
  });

  it('applies a batch in order (a later op on the same key wins)', async () => {
    const { backend } = await adapter.create();
    await backend.write([
      { type: 'put', bucket: 'key', key: u(1), value: u(1) },
      { type: 'put', bucket: 'key', key: u(1), value: u(2) },
      { type: 'put', bucket: 'key', key: u(2), value: u(1) },
      { type: 'del', bucket: 'key', key: u(2) },
    ]);
    expect(await collect(backend.scan('key'))).toEqual([[[1], [2]]]);
    await backend.close();
  });

  it('scans in unsigned byte order with gte/lt bounds, never leaving the bucket', async () => {
    const { backend } = await adapter.create();
    const keys = [u(0xff), u(0), u(1, 0), u(1), u(0x80), u(2)];
    await backend.write(keys.map((key, i) => ({ type: 'put' as const, bucket: 'lease' as const, key, value: u(i) })));
    await backend.write([{ type: 'put', bucket: 'alarm', key: u(0), value: u() }, { type: 'put', bucket: 'members', key: u(0), value: u() }]);
    const all = await collect(backend.scan('lease'));
    expect(all.map(([k]) => k)).toEqual([[0], [1], [1, 0], [2], [0x80], [0xff]]);
    const bounded = await collect(backend.scan('lease', { gte: u(1), lt: u(0x80) }));
    expect(bounded.map(([k]) => k)).toEqual([[1], [1, 0], [2]]);
    expect(await collect(backend.scan('meta'))).toEqual([]);
    expect((await collect(backend.scan('alarm'))).length).toBe(1);
    await backend.close();
  });

  it('a scan is a point-in-time view', async () => {
    const { backend } = await adapter.create();
    await backend.write([1, 2, 3].map((i) => ({ type: 'put' as const, bucket: 'key' as const, key: u(i), value: u(i) })));
    const it = backend.scan('key')[Symbol.asyncIterator]();
    const first = await it.next();
    await backend.write([{ type: 'del', bucket: 'key', key: u(3) }, { type: 'put', bucket: 'key', key: u(4), value: u(4) }]);
    const rest: number[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value[0][0]!);
    expect([first.value?.[0][0], ...rest]).toEqual([1, 2, 3]);
    await backend.close();
  });

  it('returned and stored bytes do not alias the caller\'s buffers', async () => {
    const { backend } = await adapter.create();
    const key = u(5);
    const value = u(6);
    await backend.write([{ type: 'put', bucket: 'key', key, value }]);
    value[0] = 99;
    key[0] = 98;
    const got = await backend.get('key', u(5));
    expect(got).toEqual(u(6));
    await backend.close();
  });

  it('keeps data across close and reopen; reports a size; defragments', async () => {
    const { backend, reopen } = await adapter.create();
    // Incompressible values (LevelDB compresses), from a fixed LCG.
    let x = 12345;
    const value = (): Uint8Array => Uint8Array.from({ length: 1000 }, () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24));
    const ops = Array.from({ length: 2000 }, (_, i) => ({ type: 'put' as const, bucket: 'key' as const, key: u(i >> 8, i & 0xff), value: value() }));
    const big = ops[7 * 256 + 7]!.value;
    await backend.write(ops);
    await backend.close();
    const again = await reopen();
    expect(await again.get('key', u(7, 7))).toEqual(big);
    expect((await collect(again.scan('key'))).length).toBe(2000);
    await again.defragment();
    expect(await again.sizeBytes()).toBeGreaterThan(1_000_000);
    await again.write(ops.map((op) => ({ type: 'del' as const, bucket: op.bucket, key: op.key })));
    await again.defragment();
    expect(await again.sizeBytes()).toBeLessThan(500_000);
    await again.close();
  });
});
