/**
 * Scheduled snapshots in a real server on a seconds-level schedule: files appear on schedule under k3s's
 * names in <data-dir>/snapshots, in etcd's snapshot format (etcdctl snapshot status reads them), retention
 * keeps the newest, the metrics say when the last one succeeded, and `etcetera snapshot ls|prune|delete`
 * work on the directory.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, closeClients, etcdctl, haveEtcdctl, killAll, runCli, startServer, waitFor } from './harness.js';

afterAll(async () => {
  closeClients();
  await killAll();
});


describe('scheduled snapshots', () => {
  it('appear every second with retention applied, and the snapshot verbs manage them', async () => {
    const sp = await startServer({ name: 'snapper', args: ['--snapshot-schedule', '* * * * * *', '--snapshot-retention', '2'] });
    const c = clientOf(sp);
    for (let i = 0; i < 20; i++) await c.put(`sched/${i}`).value(`v${i}`);
    const dir = join(sp.dataDir, 'snapshots');
    const own = (): string[] => readdirSync(dir).filter((n) => /^etcd-snapshot-snapper-\d+$/.test(n)).sort();
    // Four saves at least: retention must have removed some.
    await waitFor('four scheduled snapshots', async () => {
      const text = await (await fetch(`http://127.0.0.1:${sp.metricsPort}/metrics`)).text();
      const m = /^etcetera_snapshot_save_total\{result="success"\} (\d+)/m.exec(text);
      return m !== null && Number(m[1]) >= 4 ? text : undefined;
    }, 30_000);
    const names = own();
    expect(names.length).toBeGreaterThanOrEqual(1);
    expect(names.length).toBeLessThanOrEqual(2);
    const text = await (await fetch(`http://127.0.0.1:${sp.metricsPort}/metrics`)).text();
    const last = Number(/^etcetera_snapshot_last_success_timestamp_seconds (\S+)/m.exec(text)![1]);
    expect(Math.abs(last - Date.now() / 1000)).toBeLessThan(30);
    expect(Number(/^etcetera_snapshot_last_size_bytes (\S+)/m.exec(text)![1])).toBeGreaterThan(0);
    expect(sp.output.join('\n')).toContain('scheduled snapshot saved');
    // Each file is what `etcdctl snapshot save` writes: data padded to 512 bytes, then its SHA-256.
    const bytes = readFileSync(join(dir, names[names.length - 1]!));
    expect(bytes.length % 512).toBe(32);
    expect(createHash('sha256').update(bytes.subarray(0, bytes.length - 32)).digest().equals(bytes.subarray(bytes.length - 32))).toBe(true);

    // ...in etcd's own format: etcdctl reads it.
    if (haveEtcdctl()) {
      const status = await etcdctl([], ['snapshot', 'status', join(dir, names[names.length - 1]!), '-w', 'json']);
      const s = JSON.parse(status.stdout) as { revision: number; totalKey: number };
      expect(s.revision).toBe(21);
      expect(s.totalKey).toBeGreaterThanOrEqual(20); // every key of every bucket, as etcd counts them
    }

    await sp.kill('SIGTERM');
    const ls = await runCli(['snapshot', 'ls', '--data-dir', sp.dataDir]);
    expect(ls.code).toBe(0);
    expect(ls.stdout.split('\n')[0]).toMatch(/^Name\s+Location\s+Size\s+Created$/);
    for (const n of own()) expect(ls.stdout).toContain(`file://${join(dir, n)}`);
    const remaining = own();
    const pruned = await runCli(['snapshot', 'prune', '--data-dir', sp.dataDir, '--name', 'snapper', '--snapshot-retention', '1']);
    expect(pruned.code).toBe(0);
    expect(own()).toEqual(remaining.slice(-1));
    const deleted = await runCli(['etcd-snapshot', 'delete', '--snapshot-dir', dir, remaining[remaining.length - 1]!]);
    expect(deleted.code).toBe(0);
    expect(own()).toEqual([]);
    const missing = await runCli(['snapshot', 'delete', '--snapshot-dir', dir, 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no snapshot nope');
  }, 90_000);

  it('refuses a bad schedule at startup, naming the flag', async () => {
    const sp = await startServer({ name: 'badcron', args: ['--snapshot-schedule', '61 * * * *'], waitReady: false });
    expect(await sp.exited).toBe(2);
    expect(sp.output.join('\n')).toContain('invalid --snapshot-schedule: cron spec "61 * * * *": minute "61": must be 0-59');
  }, 30_000);
});
