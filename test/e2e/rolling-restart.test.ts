/**
 * Issue 26, item 2 (O5 in test/GLOSSARY.md): a rolling restart of a three-member cluster, as a service manager does it
 * (SIGTERM one member, start it again, wait until /health says true, next), causes no election timeout: every
 * stop of the leader hands leadership over (within one election timeout, idle or busy), so the term grows by
 * exactly one per leader stopped and by nothing else, and the other stops change no leader. Under a
 * kube-shaped load (kube-load.ts) no acknowledged write is lost, the watch sees every acknowledged put, the
 * kept-alive lease survives, and no larger share of requests fails than on etcd 3.4 running the same test beside it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { freePort, killAll, removeDir, sleep, startServer, tempDir, waitFor, waitForVoters, type ServerProcess } from './harness.js';
import { haveEtcd, killEtcds, startEtcd, type EtcdProcess } from './etcd-reference.js';
import { lostWrites, startKubeLoad, type KubeLoadReport } from './kube-load.js';

/** The harness's --election-timeout: a transfer must finish well within it. */
const electionTimeoutMs = 1000;

const clients: Etcd3[] = [];
afterAll(async () => {
  for (const c of clients) c.close();
  await killEtcds();
  await killAll();
}, 30_000);

/** One member of either implementation, stopped and started by the rolling restart. */
interface Restartable {
  name: string;
  clientUrl: string;
  /** SIGTERM; resolves with the exit code. */
  stop(): Promise<number | string>;
  start(): Promise<void>;
  log(): string;
}

interface Cluster {
  members: Restartable[];
  cleanup(): Promise<void>;
}

interface RollingResult {
  leaderStops: number;
  /** SIGTERM of the leader to another member reporting a new leader, per leader stop. */
  handoverMs: number[];
  termBefore: number;
  termAfter: number;
  /** Stops of a follower that changed the leader. */
  followerStopLeaderChanges: number;
  /** SIGTERM to exit, per stop (a service manager waits this long; the load holds watch and keep-alive streams). */
  stopMs: number[];
}

function clientOf(url: string): Etcd3 {
  const c = new Etcd3({ hosts: url, dialTimeout: 1000 });
  clients.push(c);
  return c;
}

async function statusOnce(url: string): Promise<{ self: string; leader: string; term: number }> {
  const c = new Etcd3({ hosts: url, dialTimeout: 1000 });
  try {
    const s = await c.maintenance.status();
    return { self: s.header.member_id, leader: s.leader, term: Number(s.raftTerm) };
  } finally {
    c.close();
  }
}

/**
 * A running member's status. A loaded 2-core machine once missed the 1 s dial (UNAVAILABLE "No connection
 * established") on a member that was up: the dial is retried, the member is not judged by it.
 */
function statusOf(url: string): Promise<{ self: string; leader: string; term: number }> {
  return waitFor(`status of ${url}`, () => statusOnce(url), 10_000);
}

async function healthy(url: string): Promise<true | undefined> {
  const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(3000) });
  return ((await r.json()) as { health: string }).health === 'true' ? true : undefined;
}

/** SIGTERM, start again, wait healthy; each member in turn. */
async function rollingRestart(cluster: Cluster): Promise<RollingResult> {
  const result: RollingResult = { leaderStops: 0, handoverMs: [], termBefore: 0, termAfter: 0, followerStopLeaderChanges: 0, stopMs: [] };
  result.termBefore = (await statusOf(cluster.members[0]!.clientUrl)).term;
  for (const m of cluster.members) {
    const others = cluster.members.filter((o) => o !== m);
    const self = await statusOf(m.clientUrl);
    const wasLeader = self.self === self.leader;
    const t0 = Date.now();
    const exit = m.stop().then((code) => {
      result.stopMs.push(Date.now() - t0);
      return code;
    });
    if (wasLeader) {
      result.leaderStops += 1;
      await waitFor('a new leader', async () => {
        const s = await statusOnce(others[0]!.clientUrl);
        return s.leader !== '0' && s.leader !== self.self ? s : undefined;
      }, 10_000);
      result.handoverMs.push(Date.now() - t0);
    }
    expect(await Promise.race([exit, sleep(10_000).then(() => 'still running')]), `${m.name} exit`).toBe(0);
    if (!wasLeader) {
      const s = await statusOf(others[0]!.clientUrl);
      if (s.leader !== self.leader) result.followerStopLeaderChanges += 1;
    }
    await m.start();
    await waitFor(`${m.name} healthy`, () => healthy(m.clientUrl), 30_000);
  }
  result.termAfter = (await statusOf(cluster.members[0]!.clientUrl)).term;
  return result;
}

async function ourCluster(prefix: string): Promise<Cluster> {
  const token = `${prefix}-token`;
  const first = await startServer({ name: `${prefix}a`, args: ['--cluster-init', '--token', token] });
  const procs: ServerProcess[] = [first];
  for (const n of ['b', 'c']) procs.push(await startServer({ name: `${prefix}${n}`, args: ['--server', first.clientUrl, '--token', token] }));
  const ca = clientOf(first.clientUrl);
  await waitForVoters(ca, 3, { what: 'three voters', timeoutMs: 30_000 });
  const members = procs.map((p, i): Restartable => {
    let current = p;
    const logs: string[] = [];
    return {
      name: p.name,
      clientUrl: p.clientUrl,
      stop: async () => {
        current.proc.kill('SIGTERM');
        const code = await current.exited;
        logs.push(...current.output);
        return code;
      },
      start: async () => {
        current = await startServer({ name: p.name, dataDir: p.dataDir, clientPort: p.clientPort, peerPort: p.peerPort });
        procs[i] = current;
      },
      log: () => [...logs, ...current.output].join('\n'),
    };
  });
  return {
    members,
    cleanup: async () => {
      await Promise.all(procs.map((p) => p.kill()));
      for (const p of procs) removeDir(p.dataDir);
    },
  };
}

async function etcdCluster(prefix: string): Promise<Cluster> {
  const names = ['a', 'b', 'c'].map((n) => `${prefix}${n}`);
  const ports = await Promise.all(names.map(async () => ({ client: await freePort(), peer: await freePort() })));
  const initial = names.map((n, i) => `${n}=http://127.0.0.1:${ports[i]!.peer}`).join(',');
  const dirs = names.map((n) => tempDir(`etcd-${n}`));
  const argsOf = (i: number): string[] => {
    const c = `http://127.0.0.1:${ports[i]!.client}`;
    const p = `http://127.0.0.1:${ports[i]!.peer}`;
    return [
      '--name', names[i]!, '--data-dir', dirs[i]!, '--listen-client-urls', c, '--advertise-client-urls', c,
      '--listen-peer-urls', p, '--initial-advertise-peer-urls', p, '--initial-cluster', initial,
      '--initial-cluster-state', 'new', '--initial-cluster-token', `${prefix}-token`,
      '--heartbeat-interval', '100', '--election-timeout', String(electionTimeoutMs), '--logger', 'zap', '--log-level', 'info',
    ];
  };
  const procs: EtcdProcess[] = names.map((_, i) => startEtcd(argsOf(i)));
  const urls = ports.map((p) => `http://127.0.0.1:${p.client}`);
  for (const url of urls) await waitFor('etcd healthy', () => healthy(url), 30_000);
  const members = names.map((name, i): Restartable => {
    const logs: string[] = [];
    return {
      name,
      clientUrl: urls[i]!,
      stop: async () => {
        const proc = procs[i]!.proc;
        const exited = new Promise<number | string>((res) => proc.once('exit', (code, signal) => res(code ?? signal ?? 'unknown')));
        proc.kill('SIGTERM');
        const code = await exited;
        logs.push(...procs[i]!.output);
        // etcd re-raises the signal once it has stopped cleanly (osutil.HandleInterrupts).
        return code === 'SIGTERM' ? 0 : code;
      },
      start: async () => {
        procs[i] = startEtcd(argsOf(i));
      },
      log: () => [...logs, ...procs[i]!.output].join('\n'),
    };
  });
  return {
    members,
    cleanup: async () => {
      await Promise.all(procs.map((p) => p.kill()));
      for (const d of dirs) removeDir(d);
    },
  };
}

/** A rolling restart under the kube-shaped load; what the load saw and what the restart measured. */
async function underLoad(cluster: Cluster): Promise<{ rolling: RollingResult; report: KubeLoadReport; lost: string[] }> {
  const t0 = Date.now();
  const load = await startKubeLoad({ hosts: cluster.members.map((m) => m.clientUrl), writers: 8, pauseMs: 2, leaseTtlSeconds: 5 });
  clients.push(load.client);
  await sleep(1000);
  const rolling = await rollingRestart(cluster);
  await sleep(1000);
  const report = await load.stop();
  report.seconds = (Date.now() - t0) / 1000;
  const lost: string[] = [];
  for (const m of cluster.members) {
    const c = clientOf(m.clientUrl);
    const present = await waitFor(`keys of ${m.name}`, () => c.getAll().prefix('/registry/').strings(), 10_000);
    lost.push(...lostWrites(report.acked, present).map((k) => `${m.name}: ${k}`));
  }
  return { rolling, report, lost };
}

function summary(name: string, r: { rolling: RollingResult; report: KubeLoadReport; lost: string[] }): string {
  return `${name}: ${r.report.requests} requests in ${r.report.seconds.toFixed(1)} s, ${r.report.failures.length} failed, ${r.report.acked.size} puts acked, ` +
    `${r.lost.length} lost, leader stops ${r.rolling.leaderStops}, handover ms [${r.rolling.handoverMs.join(', ')}], ` +
    `term ${r.rolling.termBefore} → ${r.rolling.termAfter}, lease lost ${r.report.leaseLost}, SIGTERM to exit ms [${r.rolling.stopMs.join(', ')}]`;
}

/**
 * Failures a server answered (`server stopped`, `leader changed`, …), as against those of connecting to a member
 * that is down (refused, or the etcd3 client's per-host circuit breaker open after three): the first are what
 * a stop's order decides; the second grow with how long a member is down and where the client's random host
 * choice lands, and swung from 0 to 23 % between runs of the same code on a loaded machine.
 */
const connectionFailure = /ECONNREFUSED|circuit breaker is open|No connection established|Connection dropped/;
function shares(report: KubeLoadReport): { all: number; answered: number } {
  const answered = report.failures.filter((f) => !connectionFailure.test(f)).length;
  return { all: report.failures.length / report.requests, answered: answered / report.requests };
}

function expectNoElectionTimeout(cluster: Cluster, r: RollingResult): void {
  expect(r.leaderStops).toBeGreaterThanOrEqual(1);
  expect(r.termAfter - r.termBefore).toBe(r.leaderStops);
  expect(r.followerStopLeaderChanges).toBe(0);
  for (const ms of r.handoverMs) expect(ms).toBeLessThan(electionTimeoutMs);
  const logs = cluster.members.map((m) => m.log()).join('\n');
  expect(logs).not.toContain('leadership transfer before stop timed out');
  expect(logs.match(/leadership transferred before stopping/g)?.length).toBe(r.leaderStops);
}

/** The stopping leader's own measure of its transfer (its log line's ms). */
function transferMs(cluster: Cluster): number[] {
  const lines = cluster.members.flatMap((m) => m.log().split('\n')).filter((l) => l.includes('leadership transferred before stopping'));
  return lines.map((l) => (JSON.parse(l) as { ms: number }).ms);
}

describe('rolling restart', () => {
  it('of an idle cluster: each leader stop hands over within an election timeout, no election', async () => {
    const cluster = await ourCluster('ri');
    const r = await rollingRestart(cluster);
    console.log(`idle rolling restart: handover ms [${r.handoverMs.join(', ')}], transfer ms (log) [${transferMs(cluster).join(', ')}], term ${r.termBefore} → ${r.termAfter}`);
    expectNoElectionTimeout(cluster, r);
    await cluster.cleanup();
  }, 180_000);

  /** etcd's failed requests per request: the two runs last different times (etcd restarts faster). */
  let etcdFailed: { all: number; answered: number } | undefined;
  it.runIf(haveEtcd())('of etcd 3.4 under the same load (the reference for failed requests)', async () => {
    const cluster = await etcdCluster('re');
    const r = await underLoad(cluster);
    console.log(summary('etcd 3.4', r), [...new Set(r.report.failures.map((f) => f.replace(/^\S+ \S+: /, '')))].slice(0, 8));
    expect(r.lost).toEqual([]);
    etcdFailed = shares(r.report);
    await cluster.cleanup();
  }, 240_000);

  it('under a kube-shaped load: no election, nothing acknowledged lost, no larger share of failures than etcd', async () => {
    const cluster = await ourCluster('rb');
    const r = await underLoad(cluster);
    console.log(summary('etcetera', r), `transfer ms (log) [${transferMs(cluster).join(', ')}]`, r.report.failures.slice(0, 5));
    expectNoElectionTimeout(cluster, r.rolling);
    expect(r.lost).toEqual([]);
    expect([...r.report.acked.keys()].filter((k) => !r.report.watched.has(k))).toEqual([]);
    expect(r.report.leaseLost).toBe(0);
    // A service manager's stop: under 2 s each (etcd 3.4 beside it: its stops are printed above).
    for (const ms of r.rolling.stopMs) expect(ms).toBeLessThan(2000);
    if (etcdFailed !== undefined) {
      const ours = shares(r.report);
      console.log(`failed shares: etcd ${JSON.stringify(etcdFailed)}, etcetera ${JSON.stringify(ours)}`);
      // Requests answered with a failure: as few as etcd answers (+ 2 points); connection failures within a bound
      // (a stop that kept a member down, or answered every call in flight with an error, breaks it).
      expect(ours.answered).toBeLessThanOrEqual(etcdFailed.answered + 0.02);
      expect(ours.all).toBeLessThanOrEqual(2 * etcdFailed.all + 0.05);
    }
    await cluster.cleanup();
  }, 240_000);
});
