/**
 * Issue 26, item 4, on a real process: a member counts the bytes it writes to its WAL and its backend (and
 * the kernel's count for the process), exports them as etcetera_disk_* with the rate per day and the disk's
 * projected life at --storage-endurance-tbw, serves all of it with health, leader, term and the last minute's
 * fsync latency as GET /status, and `etcetera status` prints it for several endpoints (table and JSON).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, closeClients, freePort, killAll, runCli, startServer, waitFor } from './harness.js';
import type { MemberStatusJson } from '../../src/main/member-status.js';

afterAll(async () => {
  closeClients();
  await killAll();
}, 30_000);

function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  if (line === undefined) return Number.NaN;
  const value = line.slice(series.length + 1);
  // Prometheus's text format spells infinities +Inf and -Inf.
  return value === '+Inf' ? Infinity : value === '-Inf' ? -Infinity : Number(value);
}

describe('flash wear and etcetera status', () => {
  it('counts what a member writes, projects the disk life and shows it in /status, /metrics and etcetera status', async () => {
    // A 1 GB "card" and a 1,000-year threshold: any write rate projects under it (the warning itself needs an
    // hour of measurement: test/main/wear-watch.test.ts).
    const sp = await startServer({ name: 'wear', args: ['--cluster-init', '--storage-endurance-tbw', '0.001', '--storage-life-warning-years', '1000'] });
    const c = clientOf(sp);
    const value = 'x'.repeat(1024);
    for (let i = 0; i < 300; i++) await c.put(`wear/${i}`).value(value);

    // And the rate's window reads at least a second: it is whole seconds since the member's first sample, and a
    // fast machine started the member, made 300 puts and asked in under half a second (CI read 0 here once).
    const status = await waitFor('the backend flushed and a second of rate measured', async () => {
      const s = (await (await fetch(`${sp.clientUrl}/status`)).json()) as MemberStatusJson;
      return s.disk.writtenBytes.backend >= 300 * 1024 && (s.disk.rateWindowSeconds ?? 0) >= 1 ? s : undefined;
    }, 20_000);
    expect(status.health).toBe(true);
    expect(status.leader).toBe(status.member);
    expect(status.isLeader).toBe(true);
    expect(status.term).toBeGreaterThanOrEqual(1);
    expect(status.storageProfile).toBe('ssd');
    expect(status.revision).toBe(301);
    // 300 synced puts: the fsyncs of the last minute.
    expect(status.walFsync.syncs).toBeGreaterThanOrEqual(300);
    expect(status.walFsync.p50Seconds).toBeGreaterThan(0);
    expect(status.walFsync.p99Seconds!).toBeGreaterThanOrEqual(status.walFsync.p50Seconds!);
    // The WAL holds every put's value (and its first segment's zero-fill); the kernel saw at least as many
    // bytes leave the process as its own count of the backend's batches.
    const d = status.disk;
    expect(d.writtenBytes.wal).toBeGreaterThan(300 * 1024);
    expect(d.writtenBytes.process).toBeGreaterThan(300 * 1024);
    expect(d.enduranceBytes).toBe(1e9);
    expect(d.bytesPerDay).toBeGreaterThan(0);
    // Seconds of writes project nothing (issue 32, item 4): the view measures until its window covers an hour.
    expect(d.rateWindowSeconds).toBeGreaterThan(0);
    expect(d.rateWindowSeconds).toBeLessThan(3600);
    expect(d.projectedLifeYears).toBeNull();
    expect(d.lifeWarningYears).toBe(1000);
    expect(d.lifeWarning).toBe(false); // measured over seconds, not an hour

    const metrics = await (await fetch(`http://127.0.0.1:${sp.metricsPort}/metrics`)).text();
    expect(sample(metrics, 'etcetera_disk_written_bytes_total{target="wal"}')).toBeGreaterThanOrEqual(d.writtenBytes.wal);
    expect(sample(metrics, 'etcetera_disk_written_bytes_total{target="backend"}')).toBeGreaterThanOrEqual(d.writtenBytes.backend);
    expect(sample(metrics, 'etcetera_disk_process_written_bytes_total')).toBeGreaterThanOrEqual(d.writtenBytes.process!);
    expect(sample(metrics, 'etcetera_disk_written_bytes_per_day')).toBeGreaterThan(0);
    expect(sample(metrics, 'etcetera_disk_endurance_bytes')).toBe(1e9);
    expect(sample(metrics, 'etcetera_disk_projected_life_years')).toBe(Infinity); // measuring: no alert fires
    expect(sample(metrics, 'etcetera_disk_life_warning_years')).toBe(1000);
    expect(sample(metrics, 'etcetera_disk_life_warning')).toBe(0);
    expect(sample(metrics, 'etcetera_disk_rate_window_seconds')).toBeGreaterThan(0);

    // The command, on the live member and one that does not answer.
    const dead = `127.0.0.1:${await freePort()}`;
    const live = sp.clientUrl.replace('http://', '');
    const json = await runCli(['status', '--endpoints', `${live},${dead}`, '-w', 'json']);
    expect(json.code).toBe(1);
    const rows = JSON.parse(json.stdout) as Array<{ endpoint: string; member?: string; error?: string; disk?: { enduranceBytes: number } }>;
    expect(rows.map((r) => r.endpoint)).toEqual([live, dead]);
    expect(rows[0]!.member).toBe(status.member);
    expect(rows[0]!.disk!.enduranceBytes).toBe(1e9);
    expect(rows[1]!.error).toMatch(/ECONNREFUSED/);
    const table = await runCli(['status', '--endpoints', live]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/\| +ENDPOINT +\| +ID +\| +BUILD +\| +HEALTH +\| +LEADER +\| TERM \| FSYNC P50 \| FSYNC P99 \| PROFILE \| +WRITTEN\/DAY +\| +DISK LIFE +\|/);
    expect(table.stdout).toContain(`| ${live} | ${status.member} | ${status.build} |   true | ${status.member} |`);
    expect(table.stdout).toMatch(/\| +ssd \| +[\d.]+ [kMG]?B \([\d.]+ s\) \| +measuring \([\d.]+ s of 1\.0 h\) \|/);
    // A bad flag is a usage error.
    expect((await runCli(['status', '-w', 'yaml'])).code).toBe(2);
  }, 90_000);
});
