/**
 * O4 / W9 (issue 25, item 4), on a real small file system (a 64 MiB tmpfs; needs root to mount, skipped
 * otherwise, a failure under CI): filling the disk below the reserve (two smallest log segments plus one LevelDB compaction, a
 * few MiB for this small database) raises NOSPACE before the disk is full; writes get etcd's "database space exceeded",
 * reads are served; removing the filler clears the alarm and writes work again. A start on a disk that is
 * completely full names the disk, the free bytes and what to delete, not "Database failed to open". Before
 * the fix, writes went on until the member died of ENOSPC.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { clientOf, closeClients, exitWithin, killAll, sleep, startServer, waitFor, type ServerProcess } from './harness.js';
import { mountTmpfs } from './tmpfs.js';

const MiB = 1024 * 1024;
const fs64 = mountTmpfs('disk-full');
const mnt = fs64.dir;
const mounted = fs64.mounted;

beforeAll(() => {
  if (mounted) mkdirSync(join(mnt, 'd'), { mode: 0o700 });
});

afterAll(async () => {
  closeClients();
  await killAll();
  fs64.remove();
}, 30_000);

async function once<T>(sp: ServerProcess, fn: (c: Etcd3) => Promise<T>): Promise<T> {
  const c = new Etcd3({ hosts: sp.clientUrl, dialTimeout: 2000 });
  try {
    return await fn(c);
  } finally {
    c.close();
  }
}

/** On failure, the server's last lines with the error. */
async function withOutput(sp: ServerProcess, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (error) {
    throw new Error(`${String(error)}\n--- ${sp.name}:\n${sp.output.slice(-20).join('\n')}`, { cause: error });
  }
}

const freeBytes = fs64.freeBytes;

/** Takes space with fallocate (tmpfs supports it): leaves about `leaveBytes` free. */
function fill(file: string, leaveBytes: number): void {
  const bytes = Math.max(0, Math.floor((freeBytes() - leaveBytes) / 4096) * 4096);
  const r = spawnSync('fallocate', ['-l', String(bytes), file]);
  expect(r.status, String(r.stderr)).toBe(0);
}

/** Free space settled: whatever the member writes at start (a segment being prepared, LevelDB's files) is done. */
async function settled(): Promise<void> {
  let last = -1;
  let stable = 0;
  await waitFor('free space settled', async () => {
    const now = freeBytes();
    stable = now === last ? stable + 1 : 0;
    last = now;
    await sleep(500);
    return stable >= 3 || undefined;
  }, 30_000);
}

/** Filled below the reserve: writes refused, reads served; filler removed: writes accepted again. */
async function fillAndFree(sp: ServerProcess, filler: string): Promise<void> {
  const c = clientOf(sp);
  await waitFor('a leader', async () => ((await c.maintenance.status()).leader !== '0' ? true : undefined));
  await c.put('k').value('v');
  await settled();
  fill(filler, 2 * MiB); // below the reserve (2 MiB of log + one compaction of a small database + 2 MiB), not full

  // A fresh client per call: etcd3's circuit breaker opens after a refusal and would hide the next answer.
  const refused = await waitFor('a write refused for space', async () => {
    const err = await once(sp, (w) => w.put('k2').value('x').exec()).then(() => undefined, (e: unknown) => e as Error);
    return err !== undefined && /database space exceeded/.test(err.message) ? err : undefined;
  }, 15_000);
  expect(refused.message).toContain('etcdserver: mvcc: database space exceeded');
  expect(await once(sp, (r) => r.get('k').string())).toBe('v');
  expect(sp.output.join('\n')).toMatch(/disk nearly full; raising NOSPACE/);
  expect(freeBytes()).toBeGreaterThan(1 * MiB);

  rmSync(filler);
  await waitFor('writes accepted again', async () => once(sp, (w) => w.put('k3').value('y').exec()).then(() => true, () => undefined), 15_000);
  expect(await once(sp, (r) => r.get('k3').string())).toBe('y');
}

describe.skipIf(!mounted)('a disk filling up', () => {
  it('raises NOSPACE before it is full, serves reads, clears when space returns; a start on a full disk says what to delete', async () => {
    const dataDir = join(mnt, 'd');
    const filler = join(mnt, 'filler');
    const sp = await startServer({ name: 'df', dataDir });
    await withOutput(sp, () => fillAndFree(sp, filler));

    await sp.kill('SIGKILL');
    fill(filler, 0);
    const again = await startServer({ name: 'df', dataDir, clientPort: sp.clientPort, peerPort: sp.peerPort, waitReady: false });
    expect(await exitWithin(again, 20_000)).toBe(1);
    const out = again.output.join('\n');
    expect(out).toMatch(new RegExp(`the disk of ${dataDir}/member/db is full \\(\\d+ bytes free\\): the backend cannot open\\. To make room, delete old scheduled snapshots`));
    expect(out).not.toMatch(/Database failed to open"?$/m);
  }, 120_000);
});
