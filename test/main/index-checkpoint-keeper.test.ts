/**
 * The background key index checkpoint keeper (issue 34): when it writes (only when a start would scan ≥ 16 MiB
 * and ≥ 2× the last checkpoint's size, so at rest nothing), that what it writes loads, and that a snapshot
 * from the leader's hook removes it and drops a write in progress.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { indexCheckpointScanBytesMin } from '../../src/base/limits.js';
import { silentLogger } from '../../src/config/log.js';
import { decide, IndexCheckpointKeeper } from '../../src/main/index-checkpoint-keeper.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { indexCheckpointPath } from '../../src/storage/index-checkpoint-file.js';
import { putReq } from '../mvcc/helpers.js';
import { SimFs } from '../wal/sim-fs.js';

const MiB = 1024 * 1024;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function storeWith(bytes: number, index = 1): Promise<{ store: KvStore; backend: MemoryBackend }> {
  const backend = new MemoryBackend();
  const store = await KvStore.open(backend);
  const value = 'v'.repeat(1024);
  for (let i = 0; i * 1024 < bytes; i++) store.put(putReq(`key/${i}`, value));
  store.setConsistentIndex(index, 2);
  await store.flush();
  await store.idle();
  return { store, backend };
}

async function* file(path: string): AsyncIterable<Uint8Array> {
  yield readFileSync(path);
}

describe('index checkpoint keeper', () => {
  it('decides: a large scan, large against the last checkpoint', () => {
    expect(indexCheckpointScanBytesMin).toBe(16 * MiB);
    expect(decide({ scanBytes: 15 * MiB, lastCheckpointBytes: 0 })).toBe(false);
    expect(decide({ scanBytes: 16 * MiB, lastCheckpointBytes: 0 })).toBe(true);
    expect(decide({ scanBytes: 16 * MiB, lastCheckpointBytes: 8 * MiB })).toBe(true);
    expect(decide({ scanBytes: 16 * MiB, lastCheckpointBytes: 9 * MiB })).toBe(false);
    expect(decide({ scanBytes: 100 * MiB, lastCheckpointBytes: 40 * MiB })).toBe(true);
  });

  it('writes once a start would scan 16 MiB, then nothing at rest, then again after 16 MiB more', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keeper-'));
    dirs.push(dir);
    const { store, backend } = await storeWith(4 * MiB);
    const keeper = new IndexCheckpointKeeper({ memberDir: dir, log: silentLogger(), intervalMs: 3_600_000 });
    keeper.start(() => store);
    expect(keeper.check()).toBeUndefined(); // 4 MiB: a scan that small is cheap
    for (let i = 0; i < 13 * 1024; i++) store.put(putReq(`more/${i}`, 'w'.repeat(1024)));
    store.setConsistentIndex(2, 2);
    await store.flush();
    await keeper.check();
    expect(keeper.writes).toBe(1);
    expect(existsSync(indexCheckpointPath(dir))).toBe(true);
    for (let i = 0; i < 5; i++) expect(keeper.check()).toBeUndefined(); // at rest
    expect(keeper.view().scanBytes).toBe(0);
    // What it wrote loads (the backend is at its cut).
    await store.idle();
    const loaded = await KvStore.open(backend, { indexCheckpoint: file(indexCheckpointPath(dir)) });
    expect(loaded.loadedFrom).toEqual({ checkpoint: true });
    expect(loaded.keyCount).toBe(store.keyCount);
    for (let i = 0; i < 17 * 1024; i++) store.put(putReq(`later/${i}`, 'x'.repeat(1024)));
    store.setConsistentIndex(3, 2);
    await store.flush();
    await keeper.check();
    expect(keeper.writes).toBe(2);
    expect(keeper.check()).toBeUndefined();
    // A compaction makes a start refuse the checkpoint: the whole backend counts again, and it is rewritten.
    store.compact(store.revision - 10);
    store.setConsistentIndex(4, 2);
    await store.flush();
    await store.idle();
    expect(keeper.view().scanBytes).toBeGreaterThanOrEqual(store.dbSizeBytes());
    await keeper.check();
    expect(keeper.writes).toBe(3);
    const afterCompaction = await KvStore.open(backend, { indexCheckpoint: file(indexCheckpointPath(dir)) });
    expect(afterCompaction.loadedFrom).toEqual({ checkpoint: true });
    expect(keeper.check()).toBeUndefined();
    await keeper.stop();
  });

  it('invalidate (before a snapshot replaces the backend) drops a write in progress and removes the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keeper-'));
    dirs.push(dir);
    const { store } = await storeWith(17 * MiB);
    const keeper = new IndexCheckpointKeeper({ memberDir: dir, log: silentLogger(), intervalMs: 3_600_000 });
    keeper.start(() => store);
    await keeper.check();
    expect(existsSync(indexCheckpointPath(dir))).toBe(true);
    await keeper.invalidate();
    expect(existsSync(indexCheckpointPath(dir))).toBe(false);
    // A write under way when the hook runs never lands.
    const writing = keeper.check();
    expect(writing).toBeDefined();
    await keeper.invalidate();
    await writing;
    expect(existsSync(indexCheckpointPath(dir))).toBe(false);
    expect(existsSync(`${indexCheckpointPath(dir)}.live.tmp`)).toBe(false);
    expect(keeper.writes).toBe(1);
    await keeper.stop();
  });

  describe('a disk that fills or fails while it writes (issue 32)', () => {
    /** A keeper on a simulated disk whose `n`th write fails with `code` (EIO when true). */
    async function failing(code: string | true, n = 3) {
      let writes = 0;
      const fs = new SimFs({ failOp: (op) => (op.startsWith('write ') && ++writes === n ? code : false) });
      await fs.mkdirp('/member');
      const fatal: unknown[] = [];
      const keeper = new IndexCheckpointKeeper({ memberDir: '/member', log: silentLogger(), intervalMs: 3_600_000, fs, onFatal: (e) => fatal.push(e) });
      const { store } = await storeWith(17 * MiB);
      return { fs, keeper, store, fatal };
    }

    it('ENOSPC: the write is skipped, its partial temp file removed, and the member goes on', async () => {
      const { fs, keeper, store, fatal } = await failing('ENOSPC');
      keeper.start(() => store);
      await keeper.check();
      expect(keeper.skippedFull).toBe(1);
      expect(keeper.writes).toBe(0);
      expect(await fs.list('/member')).toEqual([]);
      expect(fatal).toEqual([]);
      // The disk has room again: the next check writes it.
      await keeper.check();
      expect(keeper.writes).toBe(1);
      expect(await fs.list('/member')).toEqual(['index.ckpt']);
      await keeper.stop();
    });

    it('EIO: the disk is failing, the member stops (onFatal), the temp file removed', async () => {
      const { fs, keeper, store, fatal } = await failing(true);
      keeper.start(() => store);
      await keeper.check();
      expect(fatal).toHaveLength(1);
      expect(String(fatal[0])).toMatch(/EIO/);
      expect(keeper.skippedFull).toBe(0);
      expect(keeper.writes).toBe(0);
      expect(await fs.list('/member')).toEqual([]);
      await keeper.stop();
    });

    it('begins no checkpoint while the disk is short (NOSPACE up): the reserve is for recovery', async () => {
      const { keeper, store } = await failing('ENOSPC', 1_000_000);
      let short = true;
      keeper.start(() => store, () => short);
      expect(keeper.check()).toBeUndefined();
      short = false;
      await keeper.check();
      expect(keeper.writes).toBe(1);
      await keeper.stop();
    });
  });
});
