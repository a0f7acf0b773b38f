/**
 * bbolt reader and writer: round trips with enough keys for branch pages and values large enough for
 * overflow pages, small buckets inline, a structural check that every page is used exactly once (what
 * bbolt's tx.Check demands; also run for real through `etcdctl snapshot status` when it is installed),
 * and reading files etcd itself wrote (a saved snapshot, and a live database with free pages).
 * Randomized cases take BBOLT_SEED.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { afterAll, describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { BboltFormatError, BboltReader, BboltWriter } from '../../src/bbolt/index.js';
import { decodeMeta } from '../../src/bbolt/format.js';
import { etcdctl, haveEtcd, startEtcd } from '../backup/etcd-ref.js';

const seed = Number(process.env.BBOLT_SEED ?? Date.now() % 1_000_000);
const enc = new TextEncoder();
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempFile(name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'etcetera-bbolt-'));
  dirs.push(dir);
  return join(dir, name);
}

type Buckets = Map<string, Array<[Uint8Array, Uint8Array]>>;

function randomBuckets(rng: Prng): Buckets {
  const key: Array<[Uint8Array, Uint8Array]> = [];
  for (let i = 0; i < 30_000; i++) {
    const k = new Uint8Array(17);
    new DataView(k.buffer).setUint32(4, i + 2);
    k[8] = 0x5f;
    // Mostly small values; every 997th larger than a page (overflow), one of 200 KiB.
    const size = i === 12_345 ? 200 * 1024 : i % 997 === 0 ? 4096 + rng.int(20_000) : rng.int(300);
    const v = new Uint8Array(size);
    for (let j = 0; j < Math.min(size, 64); j++) v[j] = rng.int(256);
    key.push([k, v]);
  }
  return new Map([
    ['alarm', []],
    ['cluster', [[enc.encode('clusterVersion'), enc.encode('3.5.0')]]],
    ['key', key],
    ['lease', Array.from({ length: 40 }, (_, i) => [Uint8Array.of(0, 0, 0, 0, 0, 0, 1, i), enc.encode(`lease-${i}`)] as [Uint8Array, Uint8Array])],
    ['meta', [[enc.encode('consistent_index'), new Uint8Array(8)]]],
  ]);
}

async function writeBuckets(path: string, buckets: Buckets): Promise<number> {
  const w = await BboltWriter.create(path, { sync: false });
  for (const [name, entries] of buckets) await w.bucket(enc.encode(name), entries);
  return (await w.finish()).sizeBytes;
}

async function readBuckets(path: string): Promise<Buckets> {
  const r = await BboltReader.open(path);
  const out: Buckets = new Map();
  try {
    for await (const b of r.buckets()) {
      const entries: Array<[Uint8Array, Uint8Array]> = [];
      for await (const e of r.entries(b.header)) entries.push(e);
      out.set(new TextDecoder().decode(b.name), entries);
    }
  } finally {
    await r.close();
  }
  return out;
}

/** Every page id below the high-water mark used once: metas, freelist (and its ids), tree pages with overflow. */
function pageUse(path: string): { uses: number[]; inlineBuckets: number; branchPages: number; overflowPages: number } {
  const file = readFileSync(path);
  const meta = decodeMeta(file.subarray(16, 80));
  const size = meta.pageBytes;
  const uses = new Array<number>(meta.pgid).fill(0);
  const stats = { inlineBuckets: 0, branchPages: 0, overflowPages: 0 };
  const mark = (id: number): DataView => {
    const dv = new DataView(file.buffer, file.byteOffset + id * size);
    const overflow = dv.getUint32(12, true);
    for (let i = 0; i <= overflow; i++) uses[id + i]!++;
    stats.overflowPages += overflow;
    return dv;
  };
  uses[0]!++;
  uses[1]!++;
  const free = mark(meta.freelistPgid!);
  for (let i = 0; i < free.getUint16(10, true); i++) uses[Number(free.getBigUint64(16 + 8 * i, true))]!++;
  const walk = (id: number, nested: boolean): void => {
    const dv = mark(id);
    const flags = dv.getUint16(8, true);
    const count = dv.getUint16(10, true);
    if (flags === 0x01) stats.branchPages++;
    for (let i = 0; i < count; i++) {
      const at = 16 + 16 * i;
      if (flags === 0x01) walk(Number(dv.getBigUint64(at + 8, true)), nested);
      else if (nested && (dv.getUint32(at, true) & 1) === 1) {
        const pos = at + dv.getUint32(at + 4, true) + dv.getUint32(at + 8, true);
        const root = Number(dv.getBigUint64(pos, true));
        if (root === 0) stats.inlineBuckets++;
        else walk(root, false);
      }
    }
  };
  walk(meta.rootPgid, true);
  return { uses, ...stats };
}

describe('bbolt', () => {
  it(`round-trips buckets with branch pages, overflow values and inline buckets (BBOLT_SEED=${seed})`, async () => {
    const path = await tempFile('round.db');
    const buckets = randomBuckets(new Prng(seed));
    const size = await writeBuckets(path, buckets);
    expect(readFileSync(path).length).toBe(size);
    const back = await readBuckets(path);
    expect([...back.keys()]).toEqual([...buckets.keys()]);
    for (const [name, entries] of buckets) {
      const got = back.get(name)!;
      expect(got.length, name).toBe(entries.length);
      for (let i = 0; i < entries.length; i++) {
        if (Buffer.compare(got[i]![0], entries[i]![0]) !== 0 || Buffer.compare(got[i]![1], entries[i]![1]) !== 0) {
          throw new Error(`bucket ${name} entry ${i} differs (BBOLT_SEED=${seed})`);
        }
      }
    }
    const use = pageUse(path);
    expect(use.uses.every((n) => n === 1), 'every page used exactly once').toBe(true);
    expect(use.branchPages).toBeGreaterThan(1);
    expect(use.overflowPages).toBeGreaterThan(30);
    expect(use.inlineBuckets).toBe(3); // alarm, cluster, meta: small, as bbolt stores them (lease is over 1 KiB)
    // bucketStats (bbolt's Bucket.Stats) agrees with the page walk above: ~1,400 leaves need a root branch
    // over a level of branch pages; the key bucket holds every branch and overflow page of the file.
    const reader = await BboltReader.open(path);
    try {
      const stats = async (name: string): Promise<unknown> => reader.bucketStats((await reader.bucketHeader(enc.encode(name)))!);
      expect(await stats('key')).toMatchObject({ depth: 3, branchPages: use.branchPages, overflowPages: use.overflowPages, inline: false });
      expect(await stats('lease')).toEqual({ depth: 1, branchPages: 0, leafPages: 1, overflowPages: 0, inline: false });
      expect(await stats('alarm')).toEqual({ depth: 1, branchPages: 0, leafPages: 0, overflowPages: 0, inline: true });
    } finally {
      await reader.close();
    }
  });

  it('writes an empty database bbolt accepts (a root with no buckets)', async () => {
    const path = await tempFile('empty.db');
    await writeBuckets(path, new Map());
    expect((await readBuckets(path)).size).toBe(0);
    expect(pageUse(path).uses).toEqual([1, 1, 1, 1]);
  });

  it('refuses keys out of order, and files that are not bbolt or are cut short', async () => {
    const w = await BboltWriter.create(await tempFile('order.db'), { sync: false });
    await expect(w.bucket(enc.encode('b'), [[enc.encode('2'), new Uint8Array(0)], [enc.encode('1'), new Uint8Array(0)]])).rejects.toThrow(/ascending/);
    await w.abort();
    const junk = await tempFile('junk.db');
    await writeFile(junk, Buffer.alloc(8192, 7));
    await expect(BboltReader.open(junk)).rejects.toThrow(BboltFormatError);
    const cut = await tempFile('cut.db');
    await writeBuckets(cut, randomBuckets(new Prng(seed)));
    await truncate(cut, 100 * 4096);
    await expect(BboltReader.open(cut)).rejects.toThrow(/smaller than the database/);
  });

  it('reads a freelist page, including the long form (count 0xffff, then the real count)', async () => {
    const path = await tempFile('free.db');
    await writeBuckets(path, new Map([['a', [[enc.encode('k'), enc.encode('v')]]]]));
    const file = readFileSync(path);
    const meta = decodeMeta(file.subarray(16, 80));
    const at = meta.freelistPgid! * meta.pageBytes;
    for (const [count, ids] of [[2, [7n, 9n]], [0xffff, [3n, 4n, 5n]]] as const) {
      const page = Buffer.from(file);
      const dv = new DataView(page.buffer, page.byteOffset + at);
      dv.setUint16(10, count, true);
      const start = count === 0xffff ? 24 : 16;
      if (count === 0xffff) dv.setBigUint64(16, BigInt(ids.length), true);
      ids.forEach((id, i) => dv.setBigUint64(start + 8 * i, id, true));
      await writeFile(path, page);
      const r = await BboltReader.open(path);
      expect(await r.freePages()).toEqual(ids.map(Number));
      await r.close();
    }
  });

  it.skipIf(!haveEtcd)('writes files etcdctl 3.4 checks clean (tx.Check) and counts as we do', async () => {
    const path = await tempFile('check.db');
    await writeBuckets(path, randomBuckets(new Prng(seed)));
    const { stdout } = await etcdctl(['snapshot', 'status', path, '-w', 'json']);
    const status = JSON.parse(stdout) as { revision: number; totalKey: number };
    expect(status.revision).toBe(30_001);
    expect(status.totalKey).toBe(30_000 + 1 + 40 + 1);
  }, 60_000);

  it.skipIf(!haveEtcd).each(['array', 'map'])('reads what etcd wrote with the %s freelist: a saved snapshot and the live database with free pages', async (freelist) => {
    const etcd = await startEtcd({ args: ['--experimental-backend-bbolt-freelist-type', freelist] });
    try {
      const client = new Etcd3({ hosts: etcd.endpoint });
      const big = 'x'.repeat(100_000);
      try {
        await client.put('big').value(big);
        // Enough keys for branch pages in the key bucket; rewrites leave free pages behind.
        for (let i = 0; i < 1500; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => client.put(`k${i + j}`).value(`value-${i + j}`)));
        await client.delete().key('k7');
      } finally {
        client.close();
      }
      const snap = join(etcd.dataDir, '..', `${etcd.dataDir.split('/').pop()}-saved.db`);
      dirs.push(snap);
      await etcdctl(['snapshot', 'save', snap], etcd.endpoint);
      await etcd.stop();
      for (const file of [snap, join(etcd.dataDir, 'member/snap/db')]) {
        const back = await readBuckets(file);
        expect([...back.keys()]).toEqual(expect.arrayContaining(['key', 'meta', 'lease', 'members', 'cluster']));
        const keys = back.get('key')!;
        // 1 big + 1500 puts + 1 delete, at revisions 2..1503
        expect(keys.length).toBe(1502);
        const values = keys.map(([, v]) => Buffer.from(v));
        expect(values.some((v) => v.includes(Buffer.from(big)))).toBe(true);
        const reader = await BboltReader.open(file);
        // etcd runs bbolt with NoFreelistSync: no freelist page; free pages are found by bbolt at open.
        expect(reader.meta.freelistPgid).toBeUndefined();
        expect(await reader.freePages()).toEqual([]);
        await reader.close();
      }
    } finally {
      await etcd.stop();
      await rm(etcd.dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

