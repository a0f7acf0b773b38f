/**
 * Reruns bench/wal.bench.ts with every fdatasync/fsync slowed by strace fault injection (delay_exit of 0, 2,
 * 20 and 100 ms: an SSD, an eMMC, an SD card, a stalling SD card) and prints one table. Profile `auto` by
 * default, so each run also shows which profile the startup probe picks at that latency.
 *
 * Run: npx tsx bench/wal-strace.ts [--duration-ms 3000] [--delays 0,2,20,100] [--appenders 1,16,256]
 *      [--profile auto] [--no-prealloc] [--steady] (see wal.bench.ts; --steady needs fast syncs to warm up)
 * Needs strace (Debian: apt-get install strace); the target process is traced with --seccomp-bpf, so only
 * the two traced syscalls stop it.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatRows, type WalBenchRow } from './wal.bench.js';

const { values: args } = parseArgs({
  options: {
    'duration-ms': { type: 'string', default: '3000' },
    delays: { type: 'string', default: '0,2,20,100' },
    appenders: { type: 'string', default: '1,16,256' },
    profile: { type: 'string', default: 'auto' },
    'no-prealloc': { type: 'boolean', default: false },
    steady: { type: 'boolean', default: false },
  },
});

const bench = join(import.meta.dirname, 'wal.bench.ts');
const rows: (WalBenchRow & { syncDelayMs: number })[] = [];
for (const delayMs of args.delays.split(',').map(Number)) {
  const inject = `inject=fdatasync,fsync:delay_exit=${Math.round(delayMs * 1000)}`;
  const benchArgs = ['--json', '--duration-ms', args['duration-ms'], '--appenders', args.appenders, '--profile', args.profile];
  if (args['no-prealloc']) benchArgs.push('--no-prealloc');
  if (args.steady) benchArgs.push('--steady');
  const command = ['-f', '--seccomp-bpf', '-o', '/dev/null', '-e', 'trace=fdatasync,fsync', '-e', inject, process.execPath, '--import', 'tsx', bench, ...benchArgs];
  const result = spawnSync('strace', command, { encoding: 'utf8', timeout: 600_000 });
  if (result.status !== 0) {
    console.error(`strace run with ${delayMs} ms failed (status ${result.status}): ${result.error?.message ?? ''}\n${result.stderr}`);
    process.exit(1);
  }
  for (const line of result.stdout.split('\n').filter((l) => l.startsWith('{'))) {
    rows.push({ ...(JSON.parse(line) as WalBenchRow), syncDelayMs: delayMs });
  }
  process.stderr.write(`done: ${delayMs} ms\n`);
}
console.log(formatRows(rows));
const at20 = rows.find((r) => r.syncDelayMs === 20 && r.appenders === 256);
const single = rows.filter((r) => r.appenders === 1);
console.log('\ntargets:');
for (const r of single) {
  console.log(`  1 appender @${r.syncDelayMs} ms: ${r.syncsPerAppend.toFixed(3)} syncs/append (≤ 1.05), p50 ${r.latencyP50Ms.toFixed(1)} ms vs sync ${r.meanSyncMs.toFixed(1)} ms, ${r.processBytesPerRecord.toFixed(0)} B/record + ${r.prefillBytesPerRecord.toFixed(0)} zero-fill (≤ 4500)`);
}
if (at20) console.log(`  256 appenders @20 ms: ${at20.appendsPerSec.toFixed(0)} appends/s (≥ 5000)`);
