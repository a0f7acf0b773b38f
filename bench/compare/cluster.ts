/**
 * Starts etcd or etcetera clusters with the same static-bootstrap command line (1 or 3 members on loopback,
 * fresh data dirs, same heartbeat and election timeouts), optionally each member wrapped in strace (fsync
 * delay injection and fsync counting) and capped (low-end mode). Every member runs under a tiny shell that
 * records its pid, joins the caps and execs the server, so the pid we read /proc of is the server itself,
 * whatever wraps it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { freePort, sleep } from '../../test/e2e/harness.js';
import { RawClient } from './client.js';
import { makeCaps, type Caps } from './proc.js';
import { encodePut, encodeRange } from './wire.js';

const execFileP = promisify(execFile);

export type System = 'etcd' | 'etcetera';
export const repoRoot = resolve(import.meta.dirname, '../..');
/** ETCBENCH_ETCETERA_CLI: another build's cli.js, to compare two builds of etcetera (before/after a change). */
export const etcetraCli = process.env['ETCBENCH_ETCETERA_CLI'] ?? join(repoRoot, 'dist/src/main/cli.js');
export const etcdBin = '/usr/bin/etcd';

export interface ClusterOptions {
  size: 1 | 3;
  /** Every fsync/fdatasync delayed by this much (strace inject). */
  fsyncDelayUs?: number;
  /** strace `when=` expression for the delay (e.g. "40+40": every 40th call). */
  fsyncWhen?: string;
  /** Trace fsyncs to a log even without delay, to count them. */
  traceFsyncs?: boolean;
  lowEnd?: boolean;
  /** Every server under a 512 MiB memory cgroup, no CPU quota (the memory scenarios). */
  memoryCap?: boolean;
  /** etcetera only: write a V8 CPU profile per member into this directory on exit. */
  cpuProfDir?: string;
  heartbeatMs?: number;
  electionMs?: number;
  /**
   * 3 members only: etcetera's third member is a witness (`etcetera witness`, named in every member's
   * --initial-cluster-witnesses); etcd's stays a full member, the voter a witness replaces (issue 24).
   */
  witness?: boolean;
}

export interface Member {
  name: string;
  dataDir: string;
  clientUrl: string;
  peerUrl: string;
  metricsUrl: string;
  pidFile: string;
  straceLog?: string;
  proc?: ChildProcess;
  output: string[];
  caps?: Caps;
  exited?: Promise<void>;
  /** Set while we stop it, so its exit is not reported as a death. */
  stopping?: boolean;
  /** An etcetera witness: it serves /health and /metrics only, no gRPC (it is never asked for Status). */
  witness?: boolean;
}

let seq = 0;

export class Cluster {
  /** Clusters not yet stopped, so an interrupted run can still kill every server it started. */
  static readonly active = new Set<Cluster>();
  readonly system: System;
  readonly options: ClusterOptions;
  readonly members: Member[];
  readonly root: string;
  #clients = new Map<string, RawClient>();

  private constructor(system: System, options: ClusterOptions, members: Member[], root: string) {
    this.system = system;
    this.options = options;
    this.members = members;
    this.root = root;
  }

  /** Starts a cluster; retried on new ports when one we probed free was taken meanwhile (a shared machine). */
  static async start(system: System, o: ClusterOptions): Promise<Cluster> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await Cluster.#startOnce(system, o);
      } catch (e) {
        if (attempt >= 3 || !/address already in use|EADDRINUSE/.test(String(e))) throw e;
      }
    }
  }

  static async #startOnce(system: System, o: ClusterOptions): Promise<Cluster> {
    const root = mkdtempSync(join(tmpdir(), `etcbench-${system}-`));
    const members: Member[] = [];
    for (let i = 0; i < o.size; i++) {
      const [c, p, m] = [await freePort(), await freePort(), await freePort()];
      const name = `m${i + 1}`;
      members.push({
        name, dataDir: join(root, name), output: [], pidFile: join(root, `${name}.pid`),
        clientUrl: `http://127.0.0.1:${c}`, peerUrl: `http://127.0.0.1:${p}`, metricsUrl: `http://127.0.0.1:${m}`,
        ...(o.witness === true && system === 'etcetera' && i === o.size - 1 ? { witness: true } : {}),
      });
    }
    if (o.witness === true && o.size !== 3) throw new Error('a witness cluster has 3 members');
    const cluster = new Cluster(system, o, members, root);
    Cluster.active.add(cluster);
    for (const m of members) cluster.#spawn(m, 'new');
    try {
      await cluster.waitHealthy(60_000);
    } catch (e) {
      await cluster.stop();
      throw e;
    }
    return cluster;
  }

  #serverArgs(m: Member, state: 'new' | 'existing'): string[] {
    const hb = String(this.options.heartbeatMs ?? 100);
    const el = String(this.options.electionMs ?? 1000);
    const args = [
      '--name', m.name, '--data-dir', m.dataDir,
      '--listen-client-urls', m.clientUrl, '--advertise-client-urls', m.clientUrl,
      '--listen-peer-urls', m.peerUrl, '--initial-advertise-peer-urls', m.peerUrl,
      '--listen-metrics-urls', m.metricsUrl,
      '--heartbeat-interval', hb, '--election-timeout', el,
      '--initial-cluster', this.members.map((x) => `${x.name}=${x.peerUrl}`).join(','),
      '--initial-cluster-state', state, '--initial-cluster-token', 'etcbench',
    ];
    if (this.system === 'etcd') return [etcdBin, ...args];
    const witnesses = this.members.filter((x) => x.witness).map((x) => x.name);
    if (witnesses.length > 0) args.push('--initial-cluster-witnesses', witnesses.join(','));
    const node = [process.execPath];
    // One file per process start: the cluster size and member in the name, a sequence number to keep restarts.
    const profName = `${this.options.size}m-${m.name}-${seq++}.cpuprofile`;
    if (this.options.cpuProfDir) node.push('--cpu-prof', '--cpu-prof-dir', this.options.cpuProfDir, '--cpu-prof-name', profName);
    // Node and V8 flags for every etcetera member (e.g. --interrupt-budget=N), to measure what one saves or costs.
    node.push(...(process.env['ETCBENCH_ETCETERA_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== ''));
    // Node flags for the witness only (e.g. --jitless), to measure what they save on a witness under load.
    if (m.witness) node.push(...(process.env['ETCBENCH_WITNESS_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== ''));
    return [...node, etcetraCli, m.witness ? 'witness' : 'server', ...args];
  }

  #spawn(m: Member, state: 'new' | 'existing'): void {
    const server = this.#serverArgs(m, state);
    const capName = `etcbench-${process.pid}-${this.system}-${m.name}-${seq++}`;
    if (this.options.lowEnd && !m.caps) m.caps = makeCaps(capName);
    else if (this.options.memoryCap && !m.caps) m.caps = makeCaps(capName, { memoryOnly: true });
    const joinCaps = m.caps?.joinScript ?? '';
    const shell = ['sh', '-c', `echo $$ > ${m.pidFile} && ${joinCaps}exec "$@"`, 'sh', ...(m.caps?.prefix ?? []), ...server];
    let argv = shell;
    const o = this.options;
    if (o.fsyncDelayUs !== undefined || o.traceFsyncs) {
      m.straceLog = `${m.dataDir}.strace`;
      const inject = o.fsyncDelayUs !== undefined
        ? ['-e', `inject=fdatasync,fsync:delay_exit=${o.fsyncDelayUs}${o.fsyncWhen ? `:when=${o.fsyncWhen}` : ''}`]
        : [];
      argv = ['strace', '-f', '--seccomp-bpf', '-o', m.straceLog!, '-e', 'trace=fdatasync,fsync', ...inject, ...shell];
    }
    rmSync(m.pidFile, { force: true });
    const proc = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
    m.proc = proc;
    const collect = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') m.output.push(line);
      if (m.output.length > 2000) m.output.splice(0, m.output.length - 2000);
    };
    proc.stdout!.on('data', collect);
    proc.stderr!.on('data', collect);
    m.exited = new Promise((r) => proc.once('exit', () => r()));
  }

  /** The server's own pid (not strace's or the shell's: the shell exec'd into the server). */
  pid(m: Member): number | undefined {
    if (!existsSync(m.pidFile)) return undefined;
    const pid = Number(readFileSync(m.pidFile, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 && existsSync(`/proc/${pid}`) ? pid : undefined;
  }

  alive(m: Member): boolean {
    return m.proc !== undefined && m.proc.exitCode === null && m.proc.signalCode === null;
  }

  client(m: Member): RawClient {
    let c = this.#clients.get(m.name);
    if (!c) {
      c = new RawClient(m.clientUrl);
      this.#clients.set(m.name, c);
    }
    return c;
  }

  /** Every member answers Status and agrees on a leader, and a write through the leader succeeds. */
  async waitHealthy(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    let last = '';
    while (performance.now() < deadline) {
      for (const m of this.members) {
        if (!this.alive(m)) throw new Error(`${this.system} ${m.name} exited:\n${m.output.slice(-20).join('\n')}`);
      }
      try {
        const leader = await this.leader(1000);
        await this.client(leader).put(encodePut(Buffer.from('etcbench/health'), Buffer.from('1')), 2000);
        return;
      } catch (e) {
        last = String(e);
        await sleep(100);
      }
    }
    throw new Error(`${this.system} cluster not healthy in ${timeoutMs} ms: ${last}\n${this.members.map((m) => m.output.slice(-10).join('\n')).join('\n')}`);
  }

  /** The member every member names as leader (throws while they disagree or have none). */
  async leader(timeoutMs = 2000): Promise<Member> {
    const statuses = await Promise.all(this.members.filter((m) => this.alive(m) && !m.witness).map(async (m) => ({ m, s: await this.client(m).status(timeoutMs) })));
    const leaderId = statuses[0]?.s.leader;
    if (!leaderId || leaderId === '0' || statuses.some((x) => x.s.leader !== leaderId)) throw new Error('no agreed leader');
    const leader = statuses.find((x) => x.s.memberId === leaderId);
    if (!leader) throw new Error('leader is not among the live members');
    return leader.m;
  }

  /** Highest raft term any live member reports. */
  async maxTerm(): Promise<number> {
    let term = 0;
    for (const m of this.members) {
      if (!this.alive(m) || m.witness) continue;
      try {
        term = Math.max(term, (await this.client(m).status(3000)).raftTerm);
      } catch { /* a stalled member: the others tell */ }
    }
    return term;
  }

  /** Stops one member (SIGTERM, SIGKILL after 10 s). */
  async stopMember(m: Member, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    this.#clients.get(m.name)?.close();
    this.#clients.delete(m.name);
    const pid = this.pid(m);
    if (!this.alive(m)) return;
    m.stopping = true;
    if (pid !== undefined) process.kill(pid, signal);
    else m.proc!.kill(signal);
    const killer = setTimeout(() => {
      if (pid !== undefined && existsSync(`/proc/${pid}`)) process.kill(pid, 'SIGKILL');
      m.proc!.kill('SIGKILL');
    }, 10_000);
    await m.exited;
    clearTimeout(killer);
  }

  /**
   * Adds a member the way an etcd operator does: `etcdctl member add` on the leader, then the new server starts
   * with `--initial-cluster-state existing` and the whole cluster in `--initial-cluster`. Resolves once spawned.
   */
  async addMember(): Promise<Member> {
    const leader = await this.leader();
    const [c, p, mx] = [await freePort(), await freePort(), await freePort()];
    const name = `m${this.members.length + 1}`;
    const m: Member = {
      name, dataDir: join(this.root, name), output: [], pidFile: join(this.root, `${name}.pid`),
      clientUrl: `http://127.0.0.1:${c}`, peerUrl: `http://127.0.0.1:${p}`, metricsUrl: `http://127.0.0.1:${mx}`,
    };
    await execFileP('etcdctl', ['--endpoints', leader.clientUrl, 'member', 'add', name, `--peer-urls=${m.peerUrl}`], {
      env: { ...process.env, ETCDCTL_API: '3' }, timeout: 20_000,
    });
    this.members.push(m);
    this.#spawn(m, 'existing');
    return m;
  }

  /** Restarts a stopped member on its data dir; resolves with ms from spawn until it answers a linearizable get. */
  async restartMember(m: Member, timeoutMs = 120_000): Promise<number> {
    const t0 = performance.now();
    m.stopping = false;
    this.#spawn(m, 'existing');
    const key = Buffer.from('etcbench/health');
    while (performance.now() - t0 < timeoutMs) {
      if (!this.alive(m)) throw new Error(`${m.name} exited on restart:\n${m.output.slice(-20).join('\n')}`);
      try {
        await this.client(m).range(encodeRange(key), 1000);
        return performance.now() - t0;
      } catch {
        await sleep(10);
      }
    }
    throw new Error(`${m.name} did not serve within ${timeoutMs} ms`);
  }

  async stop(): Promise<void> {
    for (const c of this.#clients.values()) c.close();
    this.#clients.clear();
    await Promise.all(this.members.map((m) => this.stopMember(m)));
    for (const m of this.members) m.caps?.cleanup();
    rmSync(this.root, { recursive: true, force: true });
    Cluster.active.delete(this);
  }

  /** Last resort on interrupt: SIGKILL every server of every cluster still running. */
  static killAllNow(): void {
    for (const c of Cluster.active) {
      for (const m of c.members) {
        if (!c.alive(m)) continue;
        const pid = c.pid(m);
        try {
          if (pid !== undefined) process.kill(pid, 'SIGKILL');
          m.proc?.kill('SIGKILL');
        } catch { /* already gone */ }
      }
    }
  }

  /** Members that died on their own (not stopped by us), with how, for the error of a failed run. */
  deaths(): string[] {
    return this.members.filter((m) => m.proc && !this.alive(m) && !m.stopping).map((m) => {
      const oom = m.caps?.oomKills() ?? 0;
      const how = m.proc!.signalCode ?? `exit ${m.proc!.exitCode}`;
      return `${this.system} ${m.name} died (${how}${oom > 0 ? `, ${oom} OOM kill by the ${m.caps!.describe.split(':')[0]} memory cap` : ''})`;
    });
  }

  describe(): string {
    return `${this.system} ${this.options.size} member${this.options.size > 1 ? 's' : ''}`;
  }
}
