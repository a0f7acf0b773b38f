/**
 * WAL append throughput on the real disk: appends/s, syncs per append, latency, and bytes written per record,
 * at 1, 16 and 256 concurrent appenders of 256-byte entries (one entry per save, as a Raft Ready with one
 * proposal). Bytes come from /proc/self/io write_bytes (what this process dirtied; ext4 journal writes are
 * done by jbd2 and not counted there) and from the block device's sectors-written counter (/sys/block/*\/stat;
 * includes the journal, but also every other process on the machine, so it is noisy on a shared box).
 *
 * Expectations (issue 3): 1 appender ≤ 1.05 syncs/append with latency ≈ one fdatasync, ≤ 4.5 KB written per
 * record (a 256-byte record still rewrites its 4 KiB page on every sync, plus the zero-fill of preallocation,
 * amortized: about one byte per byte of log); 256 appenders at 20 ms per sync ≥ 5,000 appends/s (group commit
 * puts about half the appenders in each batch, so ~128 records per 20 ms sync ≈ 6,400/s).
 *
 * Preallocation: the zero-fill of the next segment runs in the background; each run waits for the first one
 * before measuring. By default segments are large (the profile's) and no segment is released during a run,
 * so "prefill B/rec" reports what zero-filling would cost per record (= log bytes per record: each log byte
 * is zero-filled once). With --steady, segments are 1 MiB and the appenders snapshot and release every 1,000
 * records, as a server does, so released segments are recycled; the run warms up until two were recycled,
 * and "prefill B/rec" is then the zero-fill actually done in the measured window (0 when recycling works).
 *
 * Run: npx tsx bench/wal.bench.ts [--json] [--duration-ms 3000] [--appenders 1,16,256] [--no-prealloc]
 *      [--steady] [--profile auto|ssd|emmc|sd] [--dir /path/on/the/disk]
 * Under slow syncs: npx tsx bench/wal-strace.ts (reruns this under strace delay_exit and prints a table).
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { ProfileChoice } from '../src/wal/profiles.js';
import { Wal } from '../src/wal/wal.js';

const { values: args } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    'duration-ms': { type: 'string', default: '3000' },
    appenders: { type: 'string', default: '1,16,256' },
    'no-prealloc': { type: 'boolean', default: false },
    profile: { type: 'string', default: 'auto' },
    steady: { type: 'boolean', default: false },
    dir: { type: 'string' },
  },
});

function processWriteBytes(): number {
  const m = /write_bytes: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'));
  return Number(m?.[1] ?? 0);
}

/** Sectors written by the block device holding `dir` (whole-disk counter). */
function deviceWriteBytes(dir: string): number | undefined {
  try {
    const dev = statSync(dir).dev;
    const major = Math.floor(dev / 256);
    const minor = dev % 256;
    for (const name of readdirSync('/sys/block')) {
      const id = readFileSync(`/sys/block/${name}/dev`, 'utf8').trim();
      if (id === `${major}:${minor}`) return Number(readFileSync(`/sys/block/${name}/stat`, 'utf8').trim().split(/\s+/)[6]) * 512;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

export interface WalBenchRow {
  appenders: number;
  profile: string;
  measuredSyncMs: number | undefined;
  appendsPerSec: number;
  syncsPerAppend: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  meanSyncMs: number;
  processBytesPerRecord: number;
  deviceBytesPerRecord: number | undefined;
  logBytesPerRecord: number;
  /** Zero-fill bytes per record: measured in the window with --steady, else what it would cost. */
  prefillBytesPerRecord: number;
  segmentsRecycled: number;
  preallocate: boolean;
  steady: boolean;
}

const snapshotEvery = 1000;

async function run(appenders: number, durationMs: number): Promise<WalBenchRow> {
  const base = args.dir ?? tmpdir();
  const dir = mkdtempSync(join(base, 'etcetera-wal-bench-'));
  const preallocate = !args['no-prealloc'];
  const steady = args.steady;
  try {
    const tuning = steady ? { preallocate, segmentBytes: 1 << 20 } : { preallocate };
    const { wal } = await Wal.open(dir, { profile: args.profile as ProfileChoice, tuning });
    await wal.whenPrepared();
    const data = new Uint8Array(256).fill(0x5a);
    let next = 1;
    let snapshotted = 0;
    let measuring = false;
    const latencies: number[] = [];
    let deadline = Number.POSITIVE_INFINITY;
    const loop = async (): Promise<void> => {
      while (performance.now() < deadline) {
        const index = next++;
        const t = performance.now();
        await wal.save({ entries: [{ term: 1, index, type: 0, data }], hardState: { term: 1, vote: 1n, commit: index - 1 } });
        if (measuring) latencies.push(performance.now() - t);
        if (steady && index - snapshotted >= snapshotEvery && index > snapshotted) {
          const at = index - 1; // committed: every entry below the newest is committed in this benchmark
          snapshotted = index;
          await wal.saveSnapshot({ meta: { index: at, term: 1, confState: { voters: [1n], learners: [] } }, data: Uint8Array.of(1) });
          await wal.releaseTo(at);
        }
      }
    };
    const loops = Array.from({ length: appenders }, loop);
    if (steady) {
      const warmUntil = performance.now() + 60_000;
      while (wal.metrics.segmentsRecycled < 2 && performance.now() < warmUntil) await new Promise((r) => setTimeout(r, 50));
    }
    const m0 = wal.metrics;
    const io0 = processWriteBytes();
    const dev0 = deviceWriteBytes(dir);
    const start = performance.now();
    measuring = true;
    deadline = start + durationMs;
    await Promise.all(loops);
    const elapsedMs = performance.now() - start;
    const io1 = processWriteBytes();
    const dev1 = deviceWriteBytes(dir);
    const m1 = wal.metrics;
    await wal.close();
    const saves = m1.saves - m0.saves;
    latencies.sort((a, b) => a - b);
    const syncs = m1.syncs - m0.syncs;
    const logBytesPerRecord = (m1.bytesWritten - m0.bytesWritten) / saves;
    return {
      appenders,
      profile: m1.profile,
      measuredSyncMs: m1.measuredSyncLatencyMs,
      appendsPerSec: (saves / elapsedMs) * 1000,
      syncsPerAppend: syncs / saves,
      latencyP50Ms: latencies[Math.floor(latencies.length * 0.5)] ?? 0,
      latencyP99Ms: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
      meanSyncMs: ((m1.syncSeconds.sum - m0.syncSeconds.sum) / syncs) * 1000,
      processBytesPerRecord: (io1 - io0) / saves,
      deviceBytesPerRecord: dev0 === undefined || dev1 === undefined ? undefined : (dev1 - dev0) / saves,
      logBytesPerRecord,
      prefillBytesPerRecord: steady ? (m1.preallocatedBytes - m0.preallocatedBytes) / saves : preallocate ? logBytesPerRecord : 0,
      segmentsRecycled: m1.segmentsRecycled - m0.segmentsRecycled,
      preallocate,
      steady,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function formatRows(rows: readonly (WalBenchRow & { syncDelayMs?: number })[]): string {
  const head = ['delay ms', 'appenders', 'profile', 'appends/s', 'syncs/append', 'p50 ms', 'p99 ms', 'sync ms', 'proc B/rec', 'dev B/rec', 'prefill B/rec', 'recycled'];
  const lines = rows.map((r) => [
    r.syncDelayMs === undefined ? '-' : String(r.syncDelayMs),
    String(r.appenders),
    r.profile + (r.preallocate ? '' : ' (no prealloc)') + (r.steady ? ' steady' : ''),
    r.appendsPerSec.toFixed(0),
    r.syncsPerAppend.toFixed(3),
    r.latencyP50Ms.toFixed(2),
    r.latencyP99Ms.toFixed(2),
    r.meanSyncMs.toFixed(2),
    r.processBytesPerRecord.toFixed(0),
    r.deviceBytesPerRecord === undefined ? '-' : r.deviceBytesPerRecord.toFixed(0),
    r.prefillBytesPerRecord.toFixed(0),
    String(r.segmentsRecycled),
  ]);
  const table = [head, ...lines];
  const widths = head.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return table.map((row) => '| ' + row.map((c, i) => c.padStart(widths[i]!)).join(' | ') + ' |').join('\n');
}

async function main(): Promise<void> {
  const rows: WalBenchRow[] = [];
  for (const k of args.appenders.split(',').map(Number)) {
    const row = await run(k, Number(args['duration-ms']));
    rows.push(row);
    if (args.json) process.stdout.write(JSON.stringify(row) + '\n');
  }
  if (!args.json) console.log(formatRows(rows));
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) await main();
