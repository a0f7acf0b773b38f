/**
 * What the comparison reads about a server process from outside: /proc/PID/io (write calls, bytes written to
 * storage), RSS, CPU time, fsync counts from an strace log, and the resource caps of the low-end mode
 * (cgroups v1 or v2 when writable, else taskset with no memory cap, stated in the output).
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ProcSample {
  atMs: number;
  /** write-family system calls (write, pwrite, writev…). */
  syscw: number;
  /** Bytes this process caused to be sent to the storage layer. */
  writeBytes: number;
  rssKb: number;
  /** VmHWM: the highest RSS since the process started. */
  peakRssKb: number;
  /** RssAnon and RssFile: VmRSS split into anonymous memory and mapped file pages (e.g. LevelDB's tables). */
  rssAnonKb: number;
  rssFileKb: number;
  /** user + system CPU time. */
  cpuMs: number;
}

const clockTicksPerSec = 100; // USER_HZ on Linux x86_64 and arm64

export function sampleProc(pid: number): ProcSample | undefined {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const field = (text: string, name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15 of the whole line.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpuTicks = Number(rest[11]) + Number(rest[12]);
    return {
      atMs: performance.now(),
      syscw: field(io, 'syscw'),
      writeBytes: field(io, 'write_bytes'),
      rssKb: field(status, 'VmRSS'),
      peakRssKb: field(status, 'VmHWM'),
      rssAnonKb: field(status, 'RssAnon'),
      rssFileKb: field(status, 'RssFile'),
      cpuMs: (cpuTicks * 1000) / clockTicksPerSec,
    };
  } catch {
    return undefined; // the process is gone
  }
}

export interface Rates {
  seconds: number;
  writeCallsPerSec: number;
  kbWrittenPerSec: number;
  cpuPercent: number;
  rssMb: number;
}

export function rates(a: ProcSample, b: ProcSample): Rates {
  const seconds = (b.atMs - a.atMs) / 1000;
  return {
    seconds,
    writeCallsPerSec: (b.syscw - a.syscw) / seconds,
    kbWrittenPerSec: (b.writeBytes - a.writeBytes) / 1024 / seconds,
    cpuPercent: ((b.cpuMs - a.cpuMs) / 10) / seconds,
    rssMb: b.rssKb / 1024,
  };
}

/** fsync and fdatasync calls recorded so far in an `strace -f -o FILE -e trace=fdatasync,fsync` log. */
export function countFsyncs(straceLog: string): number {
  if (!existsSync(straceLog)) return 0;
  let n = 0;
  for (const line of readFileSync(straceLog, 'utf8').split('\n')) {
    // A call interrupted by another thread's output is split in "<unfinished ...>" + "<... resumed>": count once.
    if ((line.includes('fsync(') || line.includes('fdatasync(')) && !line.includes('resumed>')) n++;
  }
  return n;
}

// ---- low-end caps

export interface Caps {
  /** Shell commands that move the current shell ($$) into the caps before it execs the server. */
  joinScript: string;
  /** Command prefix (taskset fallback). */
  prefix: string[];
  describe: string;
  /** OOM kills the memory cap caused so far (0 without a memory cap). */
  oomKills(): number;
  cleanup(): void;
}

function oomKillsIn(file: string): number {
  try {
    return Number(/^oom_kill (\d+)/m.exec(readFileSync(file, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

const cpuQuotaUs = 50_000;
const cpuPeriodUs = 100_000;
export const memoryCapBytes = 512 * 1024 * 1024;

function tryWrite(path: string, value: string): boolean {
  try {
    writeFileSync(path, value);
    return true;
  } catch {
    return false;
  }
}

function capsV1(name: string, withCpu: boolean): Caps | undefined {
  const cpu = join('/sys/fs/cgroup/cpu', name);
  const mem = join('/sys/fs/cgroup/memory', name);
  const dirs = withCpu ? [cpu, mem] : [mem];
  try {
    for (const d of dirs) mkdirSync(d, { recursive: true });
  } catch {
    return undefined;
  }
  const cpuOk = !withCpu || (tryWrite(join(cpu, 'cpu.cfs_period_us'), String(cpuPeriodUs)) && tryWrite(join(cpu, 'cpu.cfs_quota_us'), String(cpuQuotaUs)));
  const ok = cpuOk && tryWrite(join(mem, 'memory.limit_in_bytes'), String(memoryCapBytes));
  const cleanup = (): void => {
    for (const d of dirs) try { rmdirSync(d); } catch { /* still busy or gone */ }
  };
  if (!ok) {
    cleanup();
    return undefined;
  }
  return {
    joinScript: dirs.map((d) => `echo $$ > ${d}/cgroup.procs && `).join(''),
    prefix: [],
    describe: `cgroups v1: ${withCpu ? 'cpu.cfs_quota_us 50000/100000 (half a core), ' : ''}memory.limit_in_bytes 512 MiB (counts page cache)`,
    oomKills: () => oomKillsIn(join(mem, 'memory.oom_control')),
    cleanup,
  };
}

function capsV2(name: string, withCpu: boolean): Caps | undefined {
  const root = '/sys/fs/cgroup';
  if (!existsSync(join(root, 'cgroup.controllers'))) return undefined;
  tryWrite(join(root, 'cgroup.subtree_control'), '+cpu +memory');
  const dir = join(root, name);
  try {
    mkdirSync(dir, { recursive: true });
  } catch {
    return undefined;
  }
  const cleanup = (): void => {
    try { rmdirSync(dir); } catch { /* still busy or gone */ }
  };
  if ((withCpu && !tryWrite(join(dir, 'cpu.max'), `${cpuQuotaUs} ${cpuPeriodUs}`)) || !tryWrite(join(dir, 'memory.max'), String(memoryCapBytes))) {
    cleanup();
    return undefined;
  }
  return {
    joinScript: `echo $$ > ${dir}/cgroup.procs && `,
    prefix: [],
    describe: `cgroups v2: ${withCpu ? 'cpu.max 50000 100000 (half a core), ' : ''}memory.max 512 MiB (counts page cache)`,
    oomKills: () => oomKillsIn(join(dir, 'memory.events')),
    cleanup,
  };
}

/**
 * Caps for one server process: cgroups when this machine lets us, else one core by taskset, no memory cap.
 * `memoryOnly`: the 512 MiB cap without the CPU quota (the memory scenarios measure what fits, not speed).
 */
export function makeCaps(name: string, o: { memoryOnly?: boolean } = {}): Caps {
  const withCpu = !o.memoryOnly;
  const caps = capsV2(name, withCpu) ?? capsV1(name, withCpu);
  if (caps) return caps;
  return {
    joinScript: '',
    prefix: ['taskset', '-c', '0'],
    describe: 'NO cgroups available: taskset to one core (a whole core, not half), no memory cap',
    oomKills: () => 0,
    cleanup: () => {},
  };
}
