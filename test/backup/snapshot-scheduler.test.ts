/**
 * Scheduled snapshots on a seconds-level schedule, driven by a manual clock and timer port with a fake
 * snapshot (src/backup/snapshot-scheduler.ts): snapshots appear at the scheduled times under k3s's names,
 * retention keeps the newest, compression, failures leave nothing behind and do not stop the schedule.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCron } from '../../src/config/cron.js';
import { deleteSnapshots, listSnapshots, pruneSnapshots } from '../../src/backup/snapshot-dir.js';
import { SnapshotScheduler, type SnapshotResult } from '../../src/backup/snapshot-scheduler.js';
import { ManualTime } from './manual-time.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'etcetera-sched-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});


const start = Date.UTC(2026, 11, 1, 5, 0, 0);
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

function setup(o: { compress?: boolean; retention?: number; fail?: (n: number) => boolean } = {}) {
  const dir = tempDir();
  const time = new ManualTime(start);
  const results: SnapshotResult[] = [];
  let waiters: Array<() => void> = [];
  let taken = 0;
  const scheduler = new SnapshotScheduler({
    schedule: parseCron('*/2 * * * * *'),
    now: () => time.nowMs,
    timers: time.timers,
    takeSnapshot: async (path) => {
      const n = ++taken;
      await writeFile(path, `snapshot ${n} `.repeat(100));
      if (o.fail?.(n) === true) throw new Error(`disk says no (${n})`);
    },
    dir,
    nodeName: 'node-1',
    retention: o.retention ?? 3,
    compress: o.compress ?? false,
    logger: quiet,
    onResult: (r) => {
      results.push(r);
      for (const w of waiters) w();
      waiters = [];
    },
  });
  /** Advance to the next firing and wait for its snapshot to finish. */
  const tick = async (ms = 2000): Promise<SnapshotResult> => {
    const before = results.length;
    const done = new Promise<void>((r) => waiters.push(r));
    time.advance(ms);
    await done;
    expect(results.length).toBe(before + 1);
    // Let the scheduler arm its next timer after the result.
    await new Promise((r) => setImmediate(r));
    return results[results.length - 1]!;
  };
  return { dir, time, scheduler, results, tick };
}

describe('SnapshotScheduler', () => {
  it('takes a snapshot at every scheduled time, named as k3s names them, keeping the newest `retention`', async () => {
    const { dir, scheduler, tick, time } = setup({ retention: 3 });
    scheduler.start();
    expect(scheduler.dueMs).toBe(start + 2000);
    time.advance(1999);
    expect(readdirSync(dir)).toEqual([]); // nothing before the first scheduled time
    const seconds: number[] = [];
    for (let i = 1; i <= 6; i++) {
      const r = await tick(i === 1 ? 1 : 2000);
      expect(r.ok).toBe(true);
      seconds.push(start / 1000 + 2 * i);
    }
    const names = readdirSync(dir).sort();
    expect(names).toEqual(seconds.slice(-3).map((s) => `etcd-snapshot-node-1-${s}`));
    expect(readFileSync(join(dir, names[2]!), 'utf8')).toContain('snapshot 6');
    await scheduler.stop();
    expect(time.pending).toBe(0);
  });

  it('gzips snapshots when asked', async () => {
    const { dir, scheduler, tick } = setup({ compress: true });
    scheduler.start();
    const r = await tick();
    expect(r.ok && r.path.endsWith('.gz')).toBe(true);
    const [name] = readdirSync(dir);
    expect(name).toBe(`etcd-snapshot-node-1-${start / 1000 + 2}.gz`);
    expect(gunzipSync(readFileSync(join(dir, name!))).toString()).toContain('snapshot 1');
    await scheduler.stop();
  });

  it('reports a failed snapshot, leaves no partial file, and keeps the schedule', async () => {
    const { dir, scheduler, tick } = setup({ fail: (n) => n === 1 });
    scheduler.start();
    const first = await tick();
    expect(first).toMatchObject({ ok: false, error: 'disk says no (1)' });
    expect(readdirSync(dir)).toEqual([]);
    const second = await tick();
    expect(second.ok).toBe(true);
    expect(readdirSync(dir)).toHaveLength(1);
    await scheduler.stop();
  });
});

describe('the snapshot directory verbs (k3s etcd-snapshot ls, delete, prune)', () => {
  it('lists oldest first, deletes by name only, prunes only the scheduled snapshots of the node', async () => {
    const dir = tempDir();
    for (const name of ['etcd-snapshot-a-100', 'etcd-snapshot-a-300.gz', 'etcd-snapshot-a-200', 'etcd-snapshot-b-50', 'on-demand.db', 'etcd-snapshot-a-400.tmp']) {
      writeFileSync(join(dir, name), name);
    }
    const listed = await listSnapshots(dir);
    expect(listed.filter((f) => f.name.startsWith('etcd-')).map((f) => f.name)).toEqual(['etcd-snapshot-b-50', 'etcd-snapshot-a-100', 'etcd-snapshot-a-200', 'etcd-snapshot-a-300.gz']);
    expect(listed.find((f) => f.name === 'etcd-snapshot-a-300.gz')).toMatchObject({ compressed: true, createdMs: 300_000, sizeBytes: 22 });
    expect(await pruneSnapshots(dir, 'a', 1)).toEqual(['etcd-snapshot-a-100', 'etcd-snapshot-a-200']);
    expect(readdirSync(dir).sort()).toEqual(['etcd-snapshot-a-300.gz', 'etcd-snapshot-a-400.tmp', 'etcd-snapshot-b-50', 'on-demand.db']);
    expect(await deleteSnapshots(dir, ['on-demand.db', 'gone'])).toEqual({ deleted: ['on-demand.db'], missing: ['gone'] });
    await expect(deleteSnapshots(dir, ['../etc/passwd'])).rejects.toThrow('not a snapshot name');
    expect(await listSnapshots(join(dir, 'absent'))).toEqual([]);
  });
});
