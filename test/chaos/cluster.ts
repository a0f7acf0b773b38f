/**
 * A cluster of real etcetera processes whose peer traffic runs through PeerProxy: each member listens for
 * peers on its real port and advertises its proxy's port, so every peer link can be faulted. The first
 * member starts with --cluster-init, the others join k3s-style with --server <a proxy URL> (as learners,
 * promoted once caught up). Members can be killed, paused, restarted, wiped and replaced, or run under
 * strace (slow fsync).
 */
import { spawn } from 'node:child_process';
import { Etcd3 } from 'etcd3';
import { noop } from 'cockatiel';
import { Prng } from '../../src/base/index.js';
import { cliPath, ensureBuilt, freePort, removeDir, sleep, tempDir, waitFor, waitReady, type ServerProcess } from '../e2e/harness.js';
import { PeerProxy, type LinkRule } from './proxy.js';

export interface MemberSpec {
  name: string;
  dataDir: string;
  clientPort: number;
  peerPort: number;
  proxyPort: number;
  metricsPort: number;
  joinArgs: string[];
  proxy: PeerProxy;
  proc?: ServerProcess;
  /** Member id in decimal, once known. */
  id?: string;
}

export interface ClusterOptions {
  rng: Prng;
  log: (line: string) => void;
  electionMs?: number;
  heartbeatMs?: number;
  snapshotCount?: number;
}

/**
 * The server entry point: the build in dist/, or ETCETERA_CHAOS_CLI (a private copy of the build, so that a
 * long campaign is not disturbed by someone rebuilding dist/ meanwhile).
 */
export function serverCli(): string {
  return process.env.ETCETERA_CHAOS_CLI ?? cliPath;
}

/** An etcd3 client with no retries or circuit breakers: every failure reaches the history. */
export function rawClient(url: string | string[]): Etcd3 {
  return new Etcd3({ hosts: url, dialTimeout: 2000, faultHandling: { host: () => noop, global: noop } });
}

const token = 'chaos-token';

/** Every cluster not yet stopped, so an interrupted campaign can still kill its processes. */
export const liveClusters = new Set<Cluster>();

export class Cluster {
  readonly members: MemberSpec[] = [];
  rule: LinkRule = () => ({ kind: 'pass' });
  readonly electionMs: number;
  readonly #o: ClusterOptions;
  #admin = new Map<string, Etcd3>();
  #closed = false;

  constructor(o: ClusterOptions) {
    this.#o = o;
    this.electionMs = o.electionMs ?? 1000;
  }

  async start(n: number): Promise<void> {
    liveClusters.add(this);
    if (process.env.ETCETERA_CHAOS_CLI === undefined) ensureBuilt();
    for (let i = 0; i < n; i++) {
      const m = await this.addSpec(String.fromCharCode(97 + i));
      await this.launch(m);
    }
    await this.waitVoters(n);
  }

  /** A new member's ports, data directory and proxy (not started). */
  async addSpec(name: string): Promise<MemberSpec> {
    if (this.#closed) throw new Error('cluster stopped');
    const proxyPort = await freePort();
    const first = this.members[0];
    const joinArgs = first === undefined ? ['--cluster-init', '--token', token] : ['--server', `http://127.0.0.1:${first.proxyPort}`, '--token', token];
    const peerPort = await freePort();
    const m: MemberSpec = {
      name, dataDir: tempDir(`chaos-${name}`), clientPort: await freePort(), peerPort, proxyPort, metricsPort: await freePort(),
      joinArgs, proxy: new PeerProxy({ name, targetPort: peerPort, rule: () => this.rule, rng: this.#o.rng.fork() }),
    };
    await m.proxy.listen(proxyPort);
    this.members.push(m);
    return m;
  }

  clientUrl(m: MemberSpec): string {
    return `http://127.0.0.1:${m.clientPort}`;
  }

  /** Start (or restart) a member's process with its same command line; `wrap` runs it under another tool. */
  async launch(m: MemberSpec, waitReadyToo = true): Promise<void> {
    // A run that timed out may still be running its fault: never start a process after stop().
    if (this.#closed) throw new Error('cluster stopped');
    const e = this.electionMs;
    const args = [
      serverCli(), 'server', '--name', m.name, '--data-dir', m.dataDir,
      '--listen-client-urls', this.clientUrl(m), '--advertise-client-urls', this.clientUrl(m),
      '--listen-peer-urls', `http://127.0.0.1:${m.peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${m.proxyPort}`,
      '--listen-metrics-urls', `http://127.0.0.1:${m.metricsPort}`,
      '--heartbeat-interval', String(this.#o.heartbeatMs ?? 100), '--election-timeout', String(e),
      '--storage-profile', 'ssd', ...(this.#o.snapshotCount ? ['--snapshot-count', String(this.#o.snapshotCount)] : []),
      ...m.joinArgs,
    ];
    m.proc = spawnServer(m.name, this.clientUrl(m), args, (l) => this.#o.log(l));
    if (waitReadyToo) await waitReady(m.proc, 60_000);
  }

  admin(m: MemberSpec): Etcd3 {
    let c = this.#admin.get(m.name);
    if (c === undefined) this.#admin.set(m.name, (c = rawClient(this.clientUrl(m))));
    return c;
  }

  alive(): MemberSpec[] {
    return this.members.filter((m) => m.proc !== undefined && m.proc.proc.exitCode === null && m.proc.proc.signalCode === null);
  }

  async waitVoters(n: number, timeoutMs = 60_000): Promise<void> {
    await waitFor(`${n} started voters`, async () => {
      for (const m of this.alive()) {
        const r = await this.admin(m).cluster.memberList({ linearizable: true } as never, { deadline: Date.now() + 2000 });
        const voters = r.members.filter((x) => !x.isLearner && x.name !== '');
        if (voters.length !== n) return undefined;
        for (const x of r.members) {
          const spec = this.members.find((s) => s.name === x.name);
          if (spec) spec.id = x.ID;
        }
        return true;
      }
      return undefined;
    }, timeoutMs);
  }

  /** The current leader among running members, as seen by a majority-agreeing status. */
  async leader(timeoutMs = 20_000): Promise<MemberSpec> {
    return waitFor('a leader', async () => {
      for (const m of this.alive()) {
        const s = await this.admin(m).maintenance.status({ deadline: Date.now() + 1000 });
        const l = this.members.find((x) => x.id === s.leader && s.leader !== '0');
        if (l !== undefined && this.alive().includes(l)) return l;
      }
      return undefined;
    }, timeoutMs);
  }

  refreshLinks(): void {
    for (const m of this.members) m.proxy.refresh();
  }

  async kill(m: MemberSpec, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    this.#o.log(`fault: ${signal} ${m.name}`);
    if (m.proc) await m.proc.kill(signal);
  }

  signal(m: MemberSpec, signal: NodeJS.Signals): void {
    this.#o.log(`fault: ${signal} ${m.name}`);
    m.proc?.proc.kill(signal);
  }

  async restart(m: MemberSpec): Promise<void> {
    this.#o.log(`fault: restart ${m.name}`);
    this.#admin.get(m.name)?.close();
    this.#admin.delete(m.name);
    await this.launch(m);
  }

  /** Forget a member's data: it rejoins as a fresh member (through the first other member's proxy). */
  wipe(m: MemberSpec): void {
    removeDir(m.dataDir);
    m.dataDir = tempDir(`chaos-${m.name}`);
    const other = this.members.find((x) => x !== m && this.alive().includes(x))!;
    m.joinArgs = ['--server', `http://127.0.0.1:${other.proxyPort}`, '--token', token];
    m.id = undefined;
  }

  async stop(): Promise<void> {
    this.#closed = true;
    liveClusters.delete(this);
    for (const c of this.#admin.values()) c.close();
    this.#admin.clear();
    for (const m of this.members) {
      if (m.proc) {
        m.proc.proc.kill('SIGCONT');
        await m.proc.kill('SIGKILL');
      }
      await m.proxy.close();
      removeDir(m.dataDir);
    }
  }
}

/** The harness's startServer, minus its fixed peer flags: spawn the CLI with exactly `args`. */
export function spawnServer(name: string, clientUrl: string, args: string[], log: (l: string) => void): ServerProcess {
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const collect = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line === '') continue;
      output.push(line);
      if (/"level":"(error|fatal)"|panic|assert|Error:/i.test(line)) log(`${name}: ${line.slice(0, 300)}`);
    }
    if (output.length > 5000) output.splice(0, output.length - 5000);
  };
  proc.stdout.on('data', collect);
  proc.stderr.on('data', collect);
  const exited = new Promise<number | string>((res) => proc.once('exit', (code, signal) => res(code ?? signal ?? 'unknown')));
  return {
    name, dataDir: '', clientPort: 0, peerPort: 0, metricsPort: 0, clientUrl, peerUrl: '', proc, output, exited,
    kill: async (signal = 'SIGKILL') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

export { sleep };
