/**
 * Write scenarios of issue 6: (1) puts from 1/16/256 clients, (2) the same with every fsync delayed 20 ms,
 * (3) Kubernetes at rest, (4) SD-card stalls, open loop (issue 6) and closed loop (issue 15).
 */
import { RawClient } from './client.js';
import { Cluster, type ClusterOptions } from './cluster.js';
import { closedLoop, paced } from './load.js';
import { dur, mean, type Measure, type RunContext, type Scenario } from './measure.js';
import { countFsyncs, rates, sampleProc, type ProcSample } from './proc.js';
import { encodePut } from './wire.js';

const requestTimeoutMs = 10_000;
const keySpace = 10_000;

export async function withCluster<T>(ctx: RunContext, o: ClusterOptions, fn: (c: Cluster) => Promise<T>): Promise<T> {
  const cluster = await Cluster.start(ctx.system, { ...ctx.clusterDefaults, ...o });
  try {
    return await fn(cluster);
  } catch (e) {
    // A killed server's connection resets before its exit is reported (strace exits after its tracee).
    await new Promise((r) => setTimeout(r, 1500));
    const deaths = cluster.deaths();
    if (deaths.length === 0) throw e;
    throw new Error(`${deaths.join('; ')}: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    await cluster.stop();
  }
}

/** Connections for N clients: one each up to 4, then shared (HTTP/2 streams), as an apiserver shares one. */
export function connectionsFor(clients: number): number {
  return Math.min(clients, 4);
}

export function openConnections(endpoint: string, n: number): RawClient[] {
  return Array.from({ length: n }, () => new RawClient(endpoint));
}

/** 256-byte values, keys spread over a fixed key space so the store size stays bounded. */
async function putsRun(ctx: RunContext, cluster: Cluster, clients: number, prefix: string): Promise<Measure[]> {
  const leader = await cluster.leader();
  const conns = openConnections(leader.clientUrl, connectionsFor(clients));
  const value = Buffer.alloc(256, 0x61);
  const keys = Array.from({ length: keySpace }, (_, i) => Buffer.from(`bench/${String(i).padStart(6, '0')}`));
  const requests = keys.map((k) => encodePut(k, value));
  const fsyncs = (): number => (leader.straceLog ? countFsyncs(leader.straceLog) : NaN);
  try {
    const fsyncsBefore = fsyncs();
    const leaderPid = cluster.pid(leader) ?? -1;
    const procBefore = sampleProc(leaderPid);
    const membersBefore = perMember(cluster);
    const r = await closedLoop({
      clients,
      durationMs: dur(ctx, 5000, 1000),
      warmupMs: dur(ctx, 1000, 300),
      op: (c, seq) => conns[c % conns.length]!.put(requests[(c * 7919 + seq) % keySpace]!, requestTimeoutMs),
    });
    const fsyncsPerPut = (fsyncs() - fsyncsBefore) / r.opsAll;
    const procAfter = sampleProc(leaderPid);
    const membersAfter = perMember(cluster);
    // Server CPU per acknowledged put, summed over every member (issue 22: what a board's other tenants lose).
    const cpuUsPerPut = membersAfter.every((a, i) => a && membersBefore[i])
      ? (membersAfter.reduce((sum, a, i) => sum + a!.cpuMs - membersBefore[i]!.cpuMs, 0) * 1000) / r.opsAll
      : NaN;
    // Whether the leader is CPU-bound: 100 % is one core (Node's main thread is one; etcd can use both).
    const leaderCpu = procBefore && procAfter ? rates(procBefore, procAfter).cpuPercent : NaN;
    const key = `${prefix}.${cluster.options.size}m.${clients}c`;
    const what = `${cluster.options.size} member${cluster.options.size > 1 ? 's' : ''}, ${clients} client${clients > 1 ? 's' : ''}`;
    ctx.log(`  ${cluster.system} ${what}: ${r.opsPerSec.toFixed(0)} puts/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, ` +
      `leader CPU ${leaderCpu.toFixed(0)} %, CPU/put ${cpuUsPerPut.toFixed(0)} µs, ${Number.isNaN(fsyncsPerPut) ? '' : `leader fsyncs/put ${fsyncsPerPut.toFixed(2)}, `}${r.errors} errors${r.firstError ? ` (${r.firstError})` : ''}`);
    const out: Measure[] = [
      { key: `${key}.rate`, label: `${what}: puts/s`, unit: '/s', better: 'higher', value: r.opsPerSec },
      { key: `${key}.p50`, label: `${what}: p50`, unit: 'ms', better: 'lower', value: r.p50Ms },
      { key: `${key}.p99`, label: `${what}: p99`, unit: 'ms', better: 'lower', value: r.p99Ms },
    ];
    out.push({ key: `${key}.cpu`, label: `${what}: leader CPU`, unit: '%', better: 'lower', value: leaderCpu });
    out.push({ key: `${key}.cpuput`, label: `${what}: server CPU per put (all members)`, unit: 'µs', better: 'lower', value: cpuUsPerPut });
    if (!Number.isNaN(fsyncsPerPut)) out.push({ key: `${key}.fsyncs`, label: `${what}: leader fsyncs per put`, unit: '', better: 'lower', value: fsyncsPerPut });
    if (r.errors > 0) out.push({ key: `${key}.errors`, label: `${what}: errors`, unit: '', better: 'lower', value: r.errors });
    return out;
  } finally {
    for (const c of conns) c.close();
  }
}

function putsScenario(name: string, title: string, prefix: string, extra: Partial<ClusterOptions>): Scenario {
  const defaultClientCounts = [1, 16, 256];
  return {
    name,
    title,
    seconds: (quick) => 2 * (4 + defaultClientCounts.length * (quick ? 1.5 : 6)),
    async run(ctx) {
      const clientCounts = ctx.clients ?? defaultClientCounts;
      const out: Measure[] = [];
      for (const size of [1, 3] as const) {
        await withCluster(ctx, { size, ...extra }, async (cluster) => {
          for (const clients of clientCounts) out.push(...(await putsRun(ctx, cluster, clients, prefix)));
        });
      }
      return out;
    },
  };
}

export const putsPlain = putsScenario('puts', '1. puts of 256 B', 'puts', {});
export const putsSlowFsync: Scenario = {
  ...putsScenario('slow-fsync', '2. puts of 256 B, every fsync delayed 20 ms', 'slow', { fsyncDelayUs: 20_000 }),
  skipLowEnd: true, // the low-end mode already delays every fsync 20 ms in scenario 1
};

function perMember(cluster: Cluster): (ProcSample | undefined)[] {
  return cluster.members.map((m) => {
    const pid = cluster.pid(m);
    return pid === undefined ? undefined : sampleProc(pid);
  });
}

export const atRest: Scenario = {
  name: 'at-rest',
  title: '3. Kubernetes at rest: 7 writes/s on 3 members',
  seconds: (quick) => (quick ? 15 : 66),
  async run(ctx) {
    return withCluster(ctx, { size: 3, traceFsyncs: true }, async (cluster) => {
      const leader = await cluster.leader();
      const conn = new RawClient(leader.clientUrl);
      const value = Buffer.alloc(256, 0x62);
      try {
        // Let start-up writes settle, so the window sees only the steady state.
        await new Promise((r) => setTimeout(r, 2000));
        const before = perMember(cluster);
        const fsyncsBefore = cluster.members.map((m) => countFsyncs(m.straceLog!));
        const durationMs = dur(ctx, 60_000, 10_000);
        const r = await paced({
          ratePerSec: 7, durationMs, maxInFlight: 100,
          op: (seq) => conn.put(encodePut(Buffer.from(`registry/leases/${seq % 50}`), value), requestTimeoutMs),
        });
        const after = perMember(cluster);
        const rs = cluster.members.map((_, i) => (before[i] && after[i] ? rates(before[i]!, after[i]!) : undefined));
        if (rs.some((x) => x === undefined)) throw new Error('a member died during the at-rest window');
        const fsyncs = cluster.members.map((m, i) => (countFsyncs(m.straceLog!) - fsyncsBefore[i]!) / rs[i]!.seconds);
        ctx.log(`  ${cluster.describe()}: ${r.ok} ok, ${r.failed} failed; fsyncs/s ${fsyncs.map((f) => f.toFixed(1)).join(' ')}; ` +
          `write calls/s ${rs.map((x) => x!.writeCallsPerSec.toFixed(1)).join(' ')}; KB/s ${rs.map((x) => x!.kbWrittenPerSec.toFixed(1)).join(' ')}; ` +
          `RSS MB ${rs.map((x) => x!.rssMb.toFixed(0)).join(' ')}; CPU % ${rs.map((x) => x!.cpuPercent.toFixed(1)).join(' ')}`);
        return [
          { key: 'rest.fsyncs', label: 'fsyncs/s per member (mean of 3)', unit: '/s', better: 'lower', value: mean(fsyncs) },
          { key: 'rest.fsyncs.max', label: 'fsyncs/s, busiest member', unit: '/s', better: 'lower', value: Math.max(...fsyncs) },
          { key: 'rest.writes', label: 'write calls/s per member', unit: '/s', better: 'lower', value: mean(rs.map((x) => x!.writeCallsPerSec)) },
          { key: 'rest.kbps', label: 'KB written/s per member', unit: 'KB/s', better: 'lower', value: mean(rs.map((x) => x!.kbWrittenPerSec)) },
          { key: 'rest.rss', label: 'RSS per member (largest)', unit: 'MB', better: 'lower', value: Math.max(...rs.map((x) => x!.rssMb)) },
          { key: 'rest.cpu', label: 'CPU per member', unit: '%', better: 'lower', value: mean(rs.map((x) => x!.cpuPercent)) },
          { key: 'rest.cpu.ms', label: 'CPU per member, ms per second', unit: 'ms/s', better: 'lower', value: mean(rs.map((x) => x!.cpuPercent * 10)) },
        ];
      } finally {
        conn.close();
      }
    });
  },
};

const stallCluster: ClusterOptions = { size: 3, fsyncDelayUs: 1_500_000, fsyncWhen: '40+40' };
const stallValue = Buffer.alloc(256, 0x63);
const stallPut = (seq: number): Buffer => encodePut(Buffer.from(`registry/events/${seq % 500}`), stallValue);

/** Elections during `load`, counted once a pending one has had time to finish. */
async function countingElections<T>(cluster: Cluster, load: () => Promise<T>): Promise<{ result: T; elections: number }> {
  const termBefore = await cluster.maxTerm();
  const result = await load();
  await new Promise((res) => setTimeout(res, 2000));
  return { result, elections: (await cluster.maxTerm()) - termBefore };
}

/** Open loop (issue 6): 50 writes/s offered whatever the answers do. */
async function stallsOpenLoop(ctx: RunContext, cluster: Cluster): Promise<Measure[]> {
  const conn = new RawClient((await cluster.leader()).clientUrl);
  try {
    const { result: r, elections } = await countingElections(cluster, () => paced({
      ratePerSec: 50, durationMs: dur(ctx, 30_000, 8000), maxInFlight: 1000,
      op: (seq) => conn.put(stallPut(seq), 5000),
    }));
    ctx.log(`  ${cluster.describe()} open loop: ${r.ok} ok, ${r.failed} failed, ${r.skipped} skipped, ${elections} elections, ` +
      `p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms; errors ${JSON.stringify(r.errorsByMessage)}`);
    return [
      { key: 'stall.elections', label: 'elections (term increase)', unit: '', better: 'lower', value: elections },
      { key: 'stall.failed', label: 'failed requests', unit: '', better: 'lower', value: r.failed + r.skipped },
      { key: 'stall.rate', label: 'achieved writes/s (of 50)', unit: '/s', better: 'higher', value: r.achievedPerSec },
      { key: 'stall.p99', label: 'p99 latency', unit: 'ms', better: 'lower', value: r.p99Ms },
    ];
  } finally {
    conn.close();
  }
}

/**
 * Closed loop (issue 15): 8 clients, 50 writes/s offered in all, each client waiting for its answer. A stall
 * that holds replies holds the clients, so the achieved rate shows whether a leader's slow fsync delays
 * replies that a quorum of followers already made durable.
 */
async function stallsClosedLoop(ctx: RunContext, cluster: Cluster): Promise<Measure[]> {
  const conns = openConnections((await cluster.leader()).clientUrl, connectionsFor(8));
  try {
    const { result: r, elections } = await countingElections(cluster, () => closedLoop({
      clients: 8, ratePerSec: 50, durationMs: dur(ctx, 30_000, 8000), warmupMs: 0,
      op: (c, seq) => conns[c % conns.length]!.put(stallPut(seq * 8 + c), 5000),
    }));
    ctx.log(`  ${cluster.describe()} closed loop, 8 clients: ${r.opsPerSec.toFixed(1)} writes/s, ${r.errors} failed, ${elections} elections, ` +
      `p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms${r.firstError ? ` (${r.firstError})` : ''}`);
    return [
      { key: 'stall.closed.elections', label: 'closed loop, 8 clients: elections', unit: '', better: 'lower', value: elections },
      { key: 'stall.closed.failed', label: 'closed loop, 8 clients: failed requests', unit: '', better: 'lower', value: r.errors },
      { key: 'stall.closed.rate', label: 'closed loop, 8 clients: writes/s (of 50)', unit: '/s', better: 'higher', value: r.opsPerSec },
      { key: 'stall.closed.p99', label: 'closed loop, 8 clients: p99 latency', unit: 'ms', better: 'lower', value: r.p99Ms },
    ];
  } finally {
    for (const c of conns) c.close();
  }
}

export const sdStalls: Scenario = {
  name: 'sd-stalls',
  title: '4. SD-card stalls: every 40th fsync of each member delayed 1.5 s, 50 writes/s offered',
  seconds: (quick) => 2 * (quick ? 20 : 45),
  async run(ctx) {
    const open = await withCluster(ctx, stallCluster, (cluster) => stallsOpenLoop(ctx, cluster));
    const closed = await withCluster(ctx, stallCluster, (cluster) => stallsClosedLoop(ctx, cluster));
    return [...open, ...closed];
  },
};
