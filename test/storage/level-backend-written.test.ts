/**
 * LevelBackend.writtenBytes (flash wear, issue 26 item 4): the batches' bytes plus LevelDB's compaction
 * writes, read from its `leveldb.stats`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelBackend, compactionWrittenBytes } from '../../src/storage/level-backend.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('compactionWrittenBytes', () => {
  it("sums the Write(MB) column of LevelDB's stats", () => {
    const stats = [
      '                               Compactions',
      'Level  Files Size(MB) Time(sec) Read(MB) Write(MB)',
      '--------------------------------------------------',
      '  0        2        1         0        0         3',
      '  1        5        4         0        6         5',
      '',
    ].join('\n');
    expect(compactionWrittenBytes(stats)).toBe(8 * 1024 * 1024);
    expect(compactionWrittenBytes('')).toBe(0);
  });
});

describe('LevelBackend.writtenBytes', () => {
  it('counts every batch, and the compactions a large write causes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'etcetera-written-'));
    dirs.push(dir);
    const backend = await LevelBackend.open(dir);
    expect(backend.writtenBytes()).toBe(0);
    const key = new Uint8Array(10);
    await backend.write([{ type: 'put', bucket: 'key', key, value: new Uint8Array(100) }]);
    // The key gets its one-byte bucket prefix.
    expect(backend.writtenBytes()).toBe(111);
    await backend.write([{ type: 'del', bucket: 'key', key }]);
    expect(backend.writtenBytes()).toBe(122);
    // 8 MiB of incompressible values: memtable flushes and compactions write several MiB more.
    // Incompressible (LevelDB compresses with snappy): a fixed xorshift sequence.
    let x = 2463534242;
    const random = new Uint8Array(64 * 1024).map(() => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return x & 0xff;
    });
    for (let i = 0; i < 128; i++) {
      await backend.write([{ type: 'put', bucket: 'key', key: new TextEncoder().encode(`k${i}`), value: random.slice() }]);
    }
    await backend.defragment();
    const batches = 122 + 128 * (64 * 1024 + 1) + [...Array(128).keys()].reduce((n, i) => n + `k${i}`.length, 0);
    expect(backend.writtenBytes()).toBeGreaterThanOrEqual(batches + 4 * 1024 * 1024);
    await backend.close();
    // Still answers after close (the last figures are kept).
    expect(backend.writtenBytes()).toBeGreaterThanOrEqual(batches + 4 * 1024 * 1024);
  });
});

describe('LevelBackend.openReads', () => {
  it('counts open views and scans outside a view (etcd_mvcc_db_open_read_transactions)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'etcetera-reads-'));
    dirs.push(dir);
    const backend = await LevelBackend.open(dir);
    for (let i = 0; i < 3; i++) await backend.write([{ type: 'put', bucket: 'key', key: new Uint8Array([i]), value: new Uint8Array([i]) }]);
    expect(backend.openReads).toBe(0);
    const view = backend.view();
    expect(backend.openReads).toBe(1);
    // A scan inside the view is part of its transaction.
    const inView = view.scan('key')[Symbol.asyncIterator]();
    await inView.next();
    expect(backend.openReads).toBe(1);
    await inView.return?.();
    // A bare scan is a transaction of its own while it iterates.
    const bare = backend.scan('key')[Symbol.asyncIterator]();
    await bare.next();
    expect(backend.openReads).toBe(2);
    await bare.return?.();
    expect(backend.openReads).toBe(1);
    await view.close();
    await view.close(); // a second close counts nothing
    expect(backend.openReads).toBe(0);
    await backend.close();
  });
});
