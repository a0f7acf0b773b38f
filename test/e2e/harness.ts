/**
 * Real etcetera processes for end-to-end tests: the built CLI (`dist/src/main/cli.js`), on 127.0.0.1 ports
 * picked free, in temporary data directories; every process is killed when the test file ends.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Etcd3 } from 'etcd3';

export const repoRoot = resolve(import.meta.dirname, '../..');
export const cliPath = join(repoRoot, 'dist/src/main/cli.js');
const execFileP = promisify(execFile);

export function ensureBuilt(): void {
  if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` first (npm test does)`);
}

/**
 * Ports for test servers come from below the kernel's ephemeral range (32768–60999 on Linux), one block per
 * vitest worker. A port picked with listen(0) is an ephemeral port: between its release and the server's bind,
 * any outgoing connection of a parallel test may take it as its local port (a chaos run failed on
 * EADDRINUSE so in CI). Below the range only listeners take ports, and each worker keeps to its own block.
 */
const testPortsFirst = 20_000;
const testPortBlocks = 12;
const testPortsPerBlock = 1000;
const testPortBlock = Number(process.env.VITEST_POOL_ID ?? process.pid) % testPortBlocks;
// From a random start within the block: two runs of the suite on one machine (other checkouts) have workers
// with the same pool id, and walking the block in the same order from 0 they picked the same ports moments
// apart, so a data directory restored with a peer port lost it to the other run before its member bound it.
let testPortNext = Math.floor(Math.random() * testPortsPerBlock);

function canListen(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = createServer();
    s.once('error', () => res(false));
    s.listen(port, '127.0.0.1', () => s.close(() => res(true)));
  });
}

export async function freePort(): Promise<number> {
  for (let tries = 0; tries < testPortsPerBlock; tries++) {
    const port = testPortsFirst + testPortBlock * testPortsPerBlock + (testPortNext++ % testPortsPerBlock);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free test port in block ${testPortBlock}`);
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `etcetera-${prefix}-`));
}

export interface ServerProcess {
  name: string;
  dataDir: string;
  clientPort: number;
  peerPort: number;
  metricsPort: number;
  clientUrl: string;
  peerUrl: string;
  proc: ChildProcess;
  output: string[];
  /** Resolves with the exit code (or signal) once the process ended. */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

export interface StartOptions {
  name: string;
  /** `etcetera server` (default) or `etcetera witness` (ready once it says it runs; it serves no client API). */
  command?: 'server' | 'witness';
  dataDir?: string;
  args?: string[];
  clientPort?: number;
  peerPort?: number;
  env?: Record<string, string>;
  /** Wait until the client port answers a serializable Status (default true). */
  waitReady?: boolean;
  /** Run under `ulimit -n filesMax` (a process that runs out of descriptors). */
  filesMax?: number;
  /** Another build's cli.js (an older one from git history: old-build.ts); default this checkout's. */
  cli?: string;
}

const running = new Set<ServerProcess>();

/**
 * Starts a member. Ports picked here can still be taken by another test run between the pick and the bind;
 * such a start (EADDRINUSE, nothing given by the caller) is retried on fresh ports and a fresh data dir.
 */
export async function startServer(o: StartOptions): Promise<ServerProcess> {
  const retriable = o.clientPort === undefined && o.peerPort === undefined && o.dataDir === undefined && o.waitReady !== false;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServerOnce(o);
    } catch (err) {
      if (!retriable || attempt >= 3 || !String(err).includes('EADDRINUSE')) throw err;
    }
  }
}

async function startServerOnce(o: StartOptions): Promise<ServerProcess> {
  ensureBuilt();
  const dataDir = o.dataDir ?? tempDir(o.name);
  const clientPort = o.clientPort ?? (await freePort());
  const peerPort = o.peerPort ?? (await freePort());
  const metricsPort = await freePort();
  const clientUrl = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const args = [
    o.cli ?? cliPath, o.command ?? 'server',
    '--name', o.name,
    '--data-dir', dataDir,
    '--listen-client-urls', clientUrl,
    '--advertise-client-urls', clientUrl,
    '--listen-peer-urls', peerUrl,
    '--initial-advertise-peer-urls', peerUrl,
    '--listen-metrics-urls', `http://127.0.0.1:${metricsPort}`,
    '--heartbeat-interval', '100',
    '--election-timeout', '1000',
    '--storage-profile', 'ssd',
    ...(o.args ?? []),
  ];
  const [command, argv] = o.filesMax === undefined
    ? [process.execPath, args]
    : ['bash', ['-c', `ulimit -n ${o.filesMax} && exec "$0" "$@"`, process.execPath, ...args]];
  const proc = spawn(command, argv, { env: { ...process.env, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const collect = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) if (line !== '') output.push(line);
    if (output.length > 5000) output.splice(0, output.length - 5000);
  };
  proc.stdout!.on('data', collect);
  proc.stderr!.on('data', collect);
  const exited = new Promise<number | string>((res) => proc.once('exit', (code, signal) => res(code ?? signal ?? 'unknown')));
  const sp: ServerProcess = {
    name: o.name, dataDir, clientPort, peerPort, metricsPort, clientUrl, peerUrl, proc, output, exited,
    kill: async (signal = 'SIGKILL') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      const r = await exited;
      running.delete(sp);
      return r;
    },
  };
  running.add(sp);
  if (o.waitReady !== false && o.command === 'witness') await waitFor(`${o.name} running`, async () => witnessRunning(sp), 30_000);
  else if (o.waitReady !== false) await waitReady(sp);
  return sp;
}

/** A witness is ready once it logged that it runs; it throws if the process died first. */
function witnessRunning(sp: ServerProcess): true | undefined {
  if (sp.proc.exitCode !== null || sp.proc.signalCode !== null) {
    throw new Error(`${sp.name} exited (${sp.proc.exitCode ?? sp.proc.signalCode}):\n${sp.output.slice(-30).join('\n')}`);
  }
  return sp.output.some((line) => line.includes('"witness running')) ? true : undefined;
}

/** Ready: the client port answers (a member that is still joining may not have a leader yet). */
export async function waitReady(sp: ServerProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (sp.proc.exitCode !== null || sp.proc.signalCode !== null) {
      throw new Error(`${sp.name} exited (${sp.proc.exitCode ?? sp.proc.signalCode}):\n${sp.output.slice(-30).join('\n')}`);
    }
    const client = new Etcd3({ hosts: sp.clientUrl, dialTimeout: 1000 });
    try {
      await client.maintenance.status();
      // Only our own process counts: another test run's server may hold the port our member failed to bind
      // (EADDRINUSE), and would answer the Status just as well.
      if (sp.output.some((line) => line.includes('"serving client requests"'))) return;
      throw new Error('answered, but not by this process');
    } catch {
      if (Date.now() > deadline) throw new Error(`${sp.name} not ready in ${timeoutMs} ms:\n${sp.output.slice(-30).join('\n')}`);
      await sleep(200);
    } finally {
      client.close();
    }
  }
}

export async function killAll(): Promise<void> {
  closeClients();
  await Promise.all([...running].map((sp) => sp.kill('SIGKILL')));
}

const openClients = new Set<Etcd3>();

/** An etcd3 client of one member, closed by closeClients(). */
export function clientOf(sp: ServerProcess): Etcd3 {
  const c = new Etcd3({ hosts: sp.clientUrl, dialTimeout: 2000 });
  openClients.add(c);
  return c;
}

export function closeClients(): void {
  for (const c of openClients) c.close();
  openClients.clear();
}

export interface ListedMember {
  readonly id: string;
  readonly name: string;
  readonly isLearner: boolean;
  readonly peerURLs: string[];
  readonly clientURLs: string[];
}

/** A linearizable MemberList, as etcdctl member list shows it. */
export async function memberList(c: Etcd3): Promise<ListedMember[]> {
  const r = await c.cluster.memberList({ linearizable: true } as never);
  return r.members.map((m) => ({ id: m.ID, name: m.name, isLearner: m.isLearner, peerURLs: m.peerURLs, clientURLs: m.clientURLs }));
}

export interface VotersOptions {
  /** What the wait is for, in its timeout message ("three voters" by default). */
  readonly what?: string;
  readonly timeoutMs?: number;
  /** Every member has started (has a name): a voter added by `member add` but not yet running has none. */
  readonly started?: boolean;
  /** Any further condition on the list (a replaced member's old ID gone, a witness without client URLs ...). */
  readonly also?: (list: ListedMember[]) => boolean;
}

/**
 * The suite's one "wait for N voters": a linearizable member list through `c` with exactly `count` members, none
 * a learner (a joiner is added as a learner and promoted once caught up). Returns that list.
 */
export function waitForVoters(c: Etcd3, count: number, o: VotersOptions = {}): Promise<ListedMember[]> {
  return waitFor(
    o.what ?? `${count} voters`,
    async () => {
      const list = await memberList(c);
      const ok = list.length === count && list.every((m) => !m.isLearner && (o.started !== true || m.name !== '')) && (o.also?.(list) ?? true);
      return ok ? list : undefined;
    },
    o.timeoutMs,
  );
}

/** Resolves with the exit code (or signal), or 'still running' after `ms`. */
export function exitWithin(sp: ServerProcess, ms: number): Promise<number | string> {
  return Promise.race([sp.exited, sleep(ms).then(() => 'still running')]);
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(100);
  }
}

/** Runs the built `etcetera` CLI (a subcommand other than server) to completion. */
export async function runCli(args: string[], timeoutMs = 30_000): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const r = await execFileP(process.execPath, [cliPath, ...args], { timeout: timeoutMs });
    return { stdout: r.stdout, stderr: r.stderr, code: 0 };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; code?: number };
    return { stdout: err.stdout ?? '', stderr: err.stderr ?? '', code: typeof err.code === 'number' ? err.code : 1 };
  }
}

export const etcdctlPath = '/usr/bin/etcdctl';

/** etcdctl is a real client we must pass; under CI its absence is a failure, locally a skip. */
export function haveEtcdctl(): boolean {
  if (existsSync(etcdctlPath)) return true;
  if (process.env.CI) throw new Error('etcdctl is missing under CI (.ci/run installs etcd-client)');
  console.warn('etcdctl not installed: skipping etcdctl tests (apt-get install etcd-client)');
  return false;
}

export async function etcdctl(endpoints: string | string[], args: string[], timeoutMs = 15_000): Promise<{ stdout: string; stderr: string; code: number }> {
  // etcdctl 3.4 dials a scheme-prefixed endpoint as `passthrough:///http://host:port` and sends that as the
  // HTTP/2 :authority for maintenance calls; Node's HTTP/2 (nghttp2) refuses such an authority, so the
  // endpoints are given as host:port, which every etcdctl accepts.
  const eps = (Array.isArray(endpoints) ? endpoints : [endpoints]).map((e) => e.replace(/^https?:\/\//, '')).join(',');
  try {
    const r = await execFileP(etcdctlPath, [`--endpoints=${eps}`, '--command-timeout=5s', ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
      timeout: timeoutMs,
    });
    return { stdout: r.stdout, stderr: r.stderr, code: 0 };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; code?: number };
    return { stdout: err.stdout ?? '', stderr: err.stderr ?? '', code: typeof err.code === 'number' ? err.code : 1 };
  }
}
