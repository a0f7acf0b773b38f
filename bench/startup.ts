/**
 * Single-member start-to-serving time, etcd against etcetera in the same run (issue 12, item 11): from spawn
 * until a put through the client port succeeds, alternating etcd / etcetera, first start (empty data dir)
 * and restart (same data dir). Expectation: etcetera ≤ etcd (a lone voter campaigns at once; the storage
 * profile is measured once and remembered, so a restart does not measure again).
 *
 *   npx tsx bench/startup.ts [--runs 5]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Etcd3 } from 'etcd3';
import { freePort } from '../test/e2e/harness.js';

const cli = resolve(import.meta.dirname, '../dist/src/main/cli.js');
const runs = Number(process.argv[process.argv.indexOf('--runs') + 1] || 5);

async function timeToServe(kind: 'etcd' | 'etcetera', dataDir: string): Promise<number> {
  const [client, peer] = [await freePort(), await freePort()];
  const c = `http://127.0.0.1:${client}`;
  const p = `http://127.0.0.1:${peer}`;
  const started = performance.now();
  const proc =
    kind === 'etcd'
      ? spawn('/usr/bin/etcd', ['--name', 's', '--data-dir', dataDir, '--listen-client-urls', c, '--advertise-client-urls', c,
        '--listen-peer-urls', p, '--initial-advertise-peer-urls', p, '--initial-cluster', `s=${p}`], { stdio: 'ignore' })
      : spawn(process.execPath, [cli, 'server', '--name', 's', '--data-dir', dataDir, '--listen-client-urls', c,
        '--listen-peer-urls', p, '--log-level', 'error'], { stdio: 'ignore' });
  try {
    for (;;) {
      const etcd = new Etcd3({ hosts: c, dialTimeout: 500 });
      try {
        await etcd.put('k').value('v');
        return performance.now() - started;
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      } finally {
        etcd.close();
      }
      if (performance.now() - started > 30_000) throw new Error(`${kind} did not serve in 30 s`);
    }
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
  }
}

const results: Record<string, number[]> = {};
for (let i = 0; i < runs; i++) {
  for (const kind of ['etcd', 'etcetera'] as const) {
    const dir = mkdtempSync(join(tmpdir(), `startup-${kind}-`));
    try {
      (results[`${kind} first start`] ??= []).push(await timeToServe(kind, dir));
      (results[`${kind} restart`] ??= []).push(await timeToServe(kind, dir));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (const [name, xs] of Object.entries(results)) console.log(`${name.padEnd(22)} median ${median(xs).toFixed(0)} ms  (${xs.map((x) => x.toFixed(0)).join(', ')})`);
