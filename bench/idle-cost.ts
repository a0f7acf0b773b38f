/**
 * What a member costs at rest, counted rather than timed (issue 34): 3 members, idle or 7 writes/s of 256 B,
 * etcd 3.4 and etcetera alternated (A B A B). Per member over the window: CPU ms/s split by thread (utime +
 * stime of /proc/PID/task/*), wake-ups/s (voluntary context switches of every thread), write calls/s (syscw
 * of /proc/PID/io). With --strace, `strace -f -c` on one follower for the window: system calls by kind.
 *
 *   npm run build && npx tsx bench/idle-cost.ts [--writes 7] [--seconds 20] [--reps 2] [--system etcd,etcetera] [--strace]
 *
 * On a shared machine CPU ms/s is noisy; wake-ups and syscalls are counts and move only with the code.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { RawClient } from './compare/client.js';
import { Cluster, type System } from './compare/cluster.js';
import { paced } from './compare/load.js';
import { encodePut } from './compare/wire.js';

const { values: args } = parseArgs({
  options: {
    writes: { type: 'string', default: '7' },
    seconds: { type: 'string', default: '20' },
    reps: { type: 'string', default: '2' },
    system: { type: 'string', default: 'etcd,etcetera' },
    strace: { type: 'boolean', default: false },
    /** Record `perf record -g` on one follower in a second window, into this file (run with --node-options --perf-basic-prof). */
    perf: { type: 'string' },
    'node-options': { type: 'string' },
    /** etcetera only: a V8 CPU profile per member into this directory, written when it stops. */
    'cpu-prof': { type: 'string' },
  },
});
const writesPerSec = Number(args.writes);
const windowMs = Number(args.seconds) * 1000;
const clockTicksPerSec = 100;

interface ThreadSample { comm: string; cpuTicks: number; sysTicks: number; wakes: number }
interface Sample { atMs: number; syscw: number; threads: Map<number, ThreadSample> }

function sample(pid: number): Sample {
  const threads = new Map<number, ThreadSample>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const wakes = Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      threads.set(Number(tid), { comm, cpuTicks: Number(rest[11]) + Number(rest[12]), sysTicks: Number(rest[12]), wakes });
    } catch {
      // the thread ended between readdir and read
    }
  }
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return { atMs: performance.now(), syscw: Number(/^syscw:\s+(\d+)/m.exec(io)?.[1] ?? NaN), threads };
}

interface MemberRates { cpuMsPerSec: number; sysMsPerSec: number; mainCpuMsPerSec: number; wakesPerSec: number; mainWakesPerSec: number; writeCallsPerSec: number; byComm: Map<string, number> }

function diff(pid: number, a: Sample, b: Sample): MemberRates {
  const s = (b.atMs - a.atMs) / 1000;
  let cpu = 0, sys = 0, wakes = 0, mainCpu = 0, mainWakes = 0;
  const byComm = new Map<string, number>();
  for (const [tid, t] of b.threads) {
    const t0 = a.threads.get(tid) ?? { cpuTicks: 0, sysTicks: 0, wakes: 0 };
    const dCpu = ((t.cpuTicks - t0.cpuTicks) * 1000) / clockTicksPerSec / s;
    const dWakes = (t.wakes - t0.wakes) / s;
    cpu += dCpu;
    sys += ((t.sysTicks - t0.sysTicks) * 1000) / clockTicksPerSec / s;
    wakes += dWakes;
    if (tid === pid) [mainCpu, mainWakes] = [dCpu, dWakes];
    byComm.set(t.comm, (byComm.get(t.comm) ?? 0) + dWakes);
  }
  return { cpuMsPerSec: cpu, sysMsPerSec: sys, mainCpuMsPerSec: mainCpu, wakesPerSec: wakes, mainWakesPerSec: mainWakes, writeCallsPerSec: (b.syscw - a.syscw) / s, byComm };
}

async function straceCount(pid: number, ms: number): Promise<string> {
  const p = spawn('strace', ['-f', '-c', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  p.stderr.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise((r) => setTimeout(r, ms));
  p.kill('SIGINT');
  await new Promise((r) => p.once('exit', r));
  return out;
}

async function perfRecord(pid: number, ms: number, out: string): Promise<void> {
  const p = spawn('perf', ['record', '-F', '4999', '-g', '-o', out, '-p', String(pid)], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, ms));
  p.kill('SIGINT');
  await new Promise((r) => p.once('exit', r));
}

async function once(system: System): Promise<void> {
  const cluster = await Cluster.start(system, { size: 3, ...(args['cpu-prof'] !== undefined ? { cpuProfDir: args['cpu-prof'] } : {}) });
  try {
    const leader = await cluster.leader();
    const conn = new RawClient(leader.clientUrl);
    const value = Buffer.alloc(256, 0x62);
    await new Promise((r) => setTimeout(r, 3000)); // start-up writes settle
    const pids = cluster.members.map((m) => cluster.pid(m)!);
    const follower = cluster.members.findIndex((m) => m !== leader);
    const before = pids.map(sample);
    const load = writesPerSec > 0
      ? paced({ ratePerSec: writesPerSec, durationMs: windowMs, maxInFlight: 100, op: (seq) => conn.put(encodePut(Buffer.from(`registry/leases/${seq % 50}`), value), 10_000) })
      : new Promise((r) => setTimeout(r, windowMs));
    await load;
    const after = pids.map(sample);
    // A second window, traced: strace stops the tracee at every call, so it must not overlap the counts above.
    const strace = args.strace ? await straceCount(pids[follower]!, windowMs) : '';
    if (args.perf !== undefined) await perfRecord(pids[follower]!, windowMs, args.perf);
    conn.close();
    const rs = pids.map((pid, i) => diff(pid, before[i]!, after[i]!));
    const mean = (f: (r: MemberRates) => number): string => (rs.reduce((x, r) => x + f(r), 0) / rs.length).toFixed(1);
    console.log(`${system}: cpu ms/s ${rs.map((r) => r.cpuMsPerSec.toFixed(1)).join(' ')} (mean ${mean((r) => r.cpuMsPerSec)}, of it kernel ${mean((r) => r.sysMsPerSec)}, main thread ${mean((r) => r.mainCpuMsPerSec)}); ` +
      `wake-ups/s ${mean((r) => r.wakesPerSec)} (main ${mean((r) => r.mainWakesPerSec)}); write calls/s ${mean((r) => r.writeCallsPerSec)}; leader m${cluster.members.indexOf(leader) + 1}`);
    const f = rs[follower]!;
    console.log(`  follower wake-ups/s by thread: ${[...f.byComm].filter(([, w]) => w >= 0.5).map(([c, w]) => `${c} ${w.toFixed(1)}`).join(', ')}`);
    if (args.strace) console.log(strace.split('\n').filter((l) => /^\s*\d/.test(l) || /syscall/.test(l)).slice(0, 16).join('\n'));
  } finally {
    await cluster.stop();
  }
}

// Node flags for the servers only (etcd ignores NODE_OPTIONS), e.g. --perf-basic-prof or --trace-gc.
if (args['node-options'] !== undefined) process.env['NODE_OPTIONS'] = args['node-options'];
const systems = args.system.split(',') as System[];
console.log(`${readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1]}; ${writesPerSec} writes/s, ${windowMs / 1000} s windows`);
for (let rep = 0; rep < Number(args.reps); rep++) for (const s of systems) await once(s);
