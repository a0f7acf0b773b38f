/**
 * Restart after kill -9 (issue 34): one member, N puts of a 1 KB value, kill -9, then the time from spawn to
 * the first successful linearizable read, and the CPU the new process spent until then (utime + stime from
 * /proc/PID/stat). etcd 3.4 and etcetera in the same run, alternating. For etcetera also what the start
 * loaded the key index from (a checkpoint or a scan) and the bytes the background index checkpoint wrote
 * during the load and in a rest period after it (expected 0 at rest).
 *
 *   npx tsx bench/restart-kill.ts [--keys 100000] [--runs 2] [--rest-ms 6000] [--only etcd|etcetera|baseline]
 *     [--baseline <another build's dist/src/main/cli.js>] [--keep <dir>]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Etcd3 } from 'etcd3';
import { freePort } from '../test/e2e/harness.js';

const cli = resolve(import.meta.dirname, '../dist/src/main/cli.js');
const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : dflt;
};
const keys = Number(arg('--keys', '100000'));
const runs = Number(arg('--runs', '2'));
const restMs = Number(arg('--rest-ms', '6000'));
const only = arg('--only', '');
/** Load into this directory, kill -9, and stop there (no restart), keeping it: for looking at one start closely. */
const keep = arg('--keep', '');
/** Another build's cli.js, run beside as 'baseline' (an A/B against the code before a change). */
const baseline = arg('--baseline', '');
const clockTicks = 100; // USER_HZ on Linux

type Kind = 'etcd' | 'etcetera' | 'baseline';

interface Started {
  proc: ChildProcess;
  url: string;
  lines: string[];
  spawnedAt: number;
}

function start(kind: Kind, dataDir: string, client: number, peer: number): Started {
  const c = `http://127.0.0.1:${client}`;
  const p = `http://127.0.0.1:${peer}`;
  const proc =
    kind === 'etcd'
      ? spawn('/usr/bin/etcd', ['--name', 's', '--data-dir', dataDir, '--listen-client-urls', c, '--advertise-client-urls', c,
        '--listen-peer-urls', p, '--initial-advertise-peer-urls', p, '--initial-cluster', `s=${p}`], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(process.execPath, [kind === 'baseline' ? baseline : cli, 'server', '--name', 's', '--data-dir', dataDir, '--listen-client-urls', c,
        '--listen-peer-urls', p, '--storage-profile', 'ssd'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const collect = (b: Buffer): void => {
    for (const l of b.toString("utf8").split("\n")) if (l.includes("key index") || l.includes("wal")) lines.push(l);
  };
  proc.stdout!.on('data', collect);
  proc.stderr!.on('data', collect);
  return { proc, url: c, lines, spawnedAt: performance.now() };
}

/** utime + stime of a live process, in ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / clockTicks;
}

async function firstRead(s: Started, key: string): Promise<number> {
  for (;;) {
    const c = new Etcd3({ hosts: s.url, dialTimeout: 300 });
    try {
      const v = await c.get(key).string();
      if (v === null) throw new Error(`${key} missing after the restart`);
      return performance.now() - s.spawnedAt;
    } catch (err) {
      if (String(err).includes('missing after')) throw err;
      await new Promise((r) => setTimeout(r, 10));
    } finally {
      c.close();
    }
    if (performance.now() - s.spawnedAt > 60_000) throw new Error('no read in 60 s');
  }
}

async function load(url: string): Promise<void> {
  const c = new Etcd3({ hosts: url });
  // Incompressible, as most stored objects are to LevelDB's block compression.
  const pool = randomBytes(1024 * 1024);
  let next = 0;
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (next < keys) {
      const i = next++;
      await c.put(`key-${String(i).padStart(6, '0')}`).value(pool.subarray((i * 1021) % (pool.length - 1024), ((i * 1021) % (pool.length - 1024)) + 1024));
    }
  }));
  c.close();
}

function stop(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((r) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return r();
    proc.once('exit', () => r());
    proc.kill(signal);
  });
}

/** Bytes the keeper reported writing (its log lines), so far. */
function checkpointBytes(lines: string[]): number {
  let bytes = 0;
  for (const l of lines) if (l.includes('wrote a key index checkpoint')) bytes += Number(/"bytes":(\d+)/.exec(l)?.[1] ?? 0);
  return bytes;
}

interface Run { restartMs: number; cpuMs: number; from: string; loadCkptBytes: number; restCkptBytes: number }

async function once(kind: Kind): Promise<Run> {
  const dir = keep !== '' ? keep : mkdtempSync(join(tmpdir(), `restart-kill-${kind}-`));
  try {
    const [client, peer] = [await freePort(), await freePort()];
    const first = start(kind, dir, client, peer);
    await firstRead(first, 'nothing').catch(() => undefined);
    const t0 = performance.now();
    await load(first.url);
    console.error(`${kind}: loaded ${keys} keys in ${Math.round(performance.now() - t0)} ms`);
    // Rest: long enough for a keeper to catch up once, then nothing more may be written.
    await new Promise((r) => setTimeout(r, restMs));
    const settled = checkpointBytes(first.lines);
    await new Promise((r) => setTimeout(r, restMs));
    const restBytes = checkpointBytes(first.lines) - settled;
    await stop(first.proc, 'SIGKILL');
    if (keep !== '') return { restartMs: NaN, cpuMs: NaN, from: 'kept', loadCkptBytes: settled, restCkptBytes: restBytes };
    const second = start(kind, dir, client, peer);
    const restartMs = await firstRead(second, `key-${String(keys - 1).padStart(6, '0')}`);
    const cpu = cpuMs(second.proc.pid!);
    const from = second.lines.find((l) => l.includes('loaded the key index')) ?? '';
    await stop(second.proc, 'SIGKILL');
    return { restartMs, cpuMs: cpu, from: /"checkpoint":true/.test(from) ? 'checkpoint' : 'scan', loadCkptBytes: settled, restCkptBytes: restBytes };
  } finally {
    if (keep === '') rmSync(dir, { recursive: true, force: true });
  }
}

const results: Record<Kind, Run[]> = { etcd: [], etcetera: [], baseline: [] };
for (let i = 0; i < runs; i++) {
  for (const kind of ['etcd', 'etcetera', ...(baseline !== '' ? ['baseline' as const] : [])] as const) {
    if (only !== '' && only !== kind) continue;
    const r = await once(kind);
    console.error(`${kind} run ${i + 1}: ${JSON.stringify(r)}`);
    results[kind].push(r);
  }
}
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const e = results.etcd;
const o = results.etcetera;
console.log(`| figure (${keys} × 1 KB, median of ${runs}) | etcd | etcetera | ratio |`);
console.log('|---|---|---|---|');
const row = (name: string, a: number, b: number): void => console.log(`| ${name} | ${Math.round(a)} | ${Math.round(b)} | ${(b / a).toFixed(2)}× |`);
row('kill -9, spawn to first linearizable read (ms)', median(e.map((r) => r.restartMs)), median(o.map((r) => r.restartMs)));
row('CPU of the start until then, utime+stime (ms)', median(e.map((r) => r.cpuMs)), median(o.map((r) => r.cpuMs)));
console.log(`\netcetera: key index loaded from ${o.map((r) => r.from).join(', ')}; checkpoint bytes written during the load ` +
  `${o.map((r) => r.loadCkptBytes).join(', ')}, at rest ${o.map((r) => r.restCkptBytes).join(', ')}`);
if (baseline !== '') {
  const bl = results.baseline;
  row('baseline build: spawn to first read (ms), against etcd', median(e.map((r) => r.restartMs)), median(bl.map((r) => r.restartMs)));
  row('baseline build: CPU of the start (ms), against etcd', median(e.map((r) => r.cpuMs)), median(bl.map((r) => r.cpuMs)));
  console.log(`baseline: ${JSON.stringify(bl)}`);
}
console.log(`runs: etcd ${JSON.stringify(e.map((r) => Math.round(r.restartMs)))} ms, etcetera ${JSON.stringify(o.map((r) => Math.round(r.restartMs)))} ms`);
