/**
 * Memory scenarios of issue 10, each side by side with etcd: RSS while loading and at rest, bytes written per
 * put over a large key space, restart to the first linearizable read, a kube-shaped history after compact +
 * defrag, a 4th member catching up, and survival under a 512 MiB memory cgroup. Values are random bytes.
 *
 * Peak RSS is the kernel's VmHWM (exact, no sampling gaps); "during catch-up" RSS is sampled every 100 ms.
 */
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { RawClient } from './client.js';
import { bulkKey, bulkLoad, concurrentPuts } from './bulk.js';
import type { Cluster, Member } from './cluster.js';
import { dur, type Measure, type RunContext, type Scenario } from './measure.js';
import { sampleProc } from './proc.js';
import { connectionsFor, openConnections, withCluster } from './scenarios-write.js';
import { encodePut, encodeRange } from './wire.js';

const execFileP = promisify(execFile);
const mb = (kb: number | undefined): number => (kb ?? NaN) / 1024;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function rssMb(cluster: Cluster, m: Member): number {
  return mb(sampleProc(cluster.pid(m) ?? -1)?.rssKb);
}

function peakMb(cluster: Cluster, m: Member): number {
  return mb(sampleProc(cluster.pid(m) ?? -1)?.peakRssKb);
}

async function load(ctx: RunContext, conn: RawClient, prefix: string, keys: number, valueBytes: number): Promise<number> {
  const r = await bulkLoad(conn, prefix, keys, valueBytes);
  if (r.error) throw new Error(`loading failed after ${r.loaded} keys: ${r.error}`);
  ctx.log(`  loaded ${keys} × ${valueBytes} B at ${r.keysPerSec.toFixed(0)} keys/s`);
  return r.keysPerSec;
}

/** Loads through a connection of its own to `m`. */
async function loadInto(ctx: RunContext, m: Member, prefix: string, keys: number, valueBytes: number): Promise<number> {
  const conn = new RawClient(m.clientUrl);
  try {
    return await load(ctx, conn, prefix, keys, valueBytes);
  } finally {
    conn.close();
  }
}

async function etcdctl(endpoint: string, ...args: string[]): Promise<string> {
  const { stdout } = await execFileP('etcdctl', ['--endpoints', endpoint, '--command-timeout=120s', ...args], {
    env: { ...process.env, ETCDCTL_API: '3' }, timeout: 180_000,
  });
  return stdout;
}

/** `count` puts of `valueBytes` to random keys among `space` loaded ones, 16 clients; bytes written per put. */
async function bytesPerPut(cluster: Cluster, m: Member, prefix: string, space: number, count: number, valueBytes: number): Promise<number> {
  const pid = cluster.pid(m) ?? -1;
  const before = sampleProc(pid)!;
  const conn = new RawClient(m.clientUrl);
  let sent = 0;
  try {
    const worker = async (): Promise<void> => {
      while (sent < count) {
        sent++;
        await conn.put(encodePut(bulkKey(prefix, randomInt(space)), Buffer.alloc(valueBytes, 0x61)), 10_000);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
  } finally {
    conn.close();
  }
  // etcd commits its backend every 100 ms, etcetera flushes every 20 ms: both have written once this is over.
  await sleep(1500);
  const after = sampleProc(pid)!;
  return (after.writeBytes - before.writeBytes) / count;
}

/** 1 member, 100,000 × 1 KB: peak and at-rest RSS, bytes written per small put, restart to first read. */
export const memorySingle: Scenario = {
  name: 'memory',
  title: '6a. memory, 1 member, 100,000 keys × 1 KB (random): RSS, bytes per put, restart',
  seconds: (quick) => (quick ? 30 : 120),
  async run(ctx) {
    return withCluster(ctx, { size: 1 }, async (cluster) => {
      const m = cluster.members[0]!;
      const keys = dur(ctx, 100_000, 20_000);
      const rate = await loadInto(ctx, m, 'mem/', keys, 1024);
      const peak = peakMb(cluster, m);
      const afterLoad = rssMb(cluster, m);
      const restMs = dur(ctx, 60_000, 5_000);
      await sleep(restMs);
      const rest = rssMb(cluster, m);
      // 30,000 puts, not 10,000: LevelDB compacts level 0 in rounds (every 4 memtable flushes), and the first
      // round after the load also rewrites the tables the load left at level 0. 10,000 puts spanned less than
      // one round, so the row sampled a round or none (etcetera 0.6–2.9 KiB per put across windows of one run);
      // 30,000 span a few and measure the average. etcd's bbolt pays its cost at every commit, window or not.
      const perPut = await bytesPerPut(cluster, m, 'mem/', keys, dur(ctx, 30_000, 2_000), 100);
      await cluster.stopMember(m);
      const restartMs = await cluster.restartMember(m);
      ctx.log(`  ${cluster.describe()}: peak ${peak.toFixed(0)} MB, after load ${afterLoad.toFixed(0)} MB, at rest ${rest.toFixed(0)} MB; ${(perPut / 1024).toFixed(1)} KiB written per 100 B put; restart ${restartMs.toFixed(0)} ms`);
      return [
        { key: 'mem1.load', label: 'bulk load (Txn of 100 puts of 1 KB)', unit: 'keys/s', better: 'higher', value: rate },
        { key: 'mem1.peak', label: `peak RSS while loading ${keys.toLocaleString('en-US')} × 1 KB`, unit: 'MB', better: 'lower', value: peak },
        { key: 'mem1.rest', label: `RSS at rest ${restMs / 1000} s later`, unit: 'MB', better: 'lower', value: rest },
        { key: 'mem1.bpp', label: 'bytes written per 100 B put over that key space', unit: 'KiB', better: 'lower', value: perPut / 1024 },
        { key: 'mem1.restart', label: 'restart to first linearizable read', unit: 'ms', better: 'lower', value: restartMs },
      ];
    });
  },
};

/** 1 member, 1,000,000 × 100 B: peak RSS and restart to first read. */
export const memoryMillion: Scenario = {
  name: 'memory-1m',
  title: '6b. memory, 1 member, 1,000,000 keys × 100 B: peak RSS, restart',
  seconds: (quick) => (quick ? 30 : 120),
  async run(ctx) {
    return withCluster(ctx, { size: 1 }, async (cluster) => {
      const m = cluster.members[0]!;
      const keys = dur(ctx, 1_000_000, 100_000);
      const rate = await loadInto(ctx, m, 'small/', keys, 100);
      const peak = peakMb(cluster, m);
      await cluster.stopMember(m);
      const restartMs = await cluster.restartMember(m);
      const restarted = rssMb(cluster, m);
      ctx.log(`  ${cluster.describe()}: peak ${peak.toFixed(0)} MB; restart ${restartMs.toFixed(0)} ms, then ${restarted.toFixed(0)} MB`);
      return [
        { key: 'mem1m.load', label: 'bulk load (Txn of 100 puts of 100 B)', unit: 'keys/s', better: 'higher', value: rate },
        { key: 'mem1m.peak', label: `peak RSS while loading ${keys.toLocaleString('en-US')} × 100 B`, unit: 'MB', better: 'lower', value: peak },
        { key: 'mem1m.restart', label: 'restart to first linearizable read', unit: 'ms', better: 'lower', value: restartMs },
        { key: 'mem1m.restarted', label: 'RSS right after the restart', unit: 'MB', better: 'lower', value: restarted },
      ];
    });
  },
};

/** 1 member, 20,000 keys × 4 KB rewritten 6 times (kube-shaped history), then compact + defrag. */
export const memoryKube: Scenario = {
  name: 'memory-kube',
  title: '6c. memory, 1 member, 20,000 keys × 4 KB × 6 revisions, after compact + defrag',
  seconds: (quick) => (quick ? 30 : 90),
  async run(ctx) {
    return withCluster(ctx, { size: 1 }, async (cluster) => {
      const m = cluster.members[0]!;
      const keys = dur(ctx, 20_000, 4_000);
      const conn = new RawClient(m.clientUrl);
      try {
        for (let round = 0; round < 6; round++) await load(ctx, conn, 'kube/', keys, 4096);
        const before = await conn.status(5000);
        await etcdctl(m.clientUrl, 'compact', String(before.header.revision), '--physical');
        await etcdctl(m.clientUrl, 'defrag');
        await sleep(2000);
        const after = await conn.status(5000);
        const rss = rssMb(cluster, m);
        const peak = peakMb(cluster, m);
        ctx.log(`  ${cluster.describe()}: db ${(before.dbSize / 2 ** 20).toFixed(0)} → ${(after.dbSize / 2 ** 20).toFixed(0)} MiB after compact + defrag; RSS ${rss.toFixed(0)} MB (peak ${peak.toFixed(0)} MB)`);
        return [
          { key: 'kube.rss', label: 'RSS after compact + defrag', unit: 'MB', better: 'lower', value: rss },
          { key: 'kube.peak', label: 'peak RSS', unit: 'MB', better: 'lower', value: peak },
          { key: 'kube.db.before', label: 'db size (Status) before compaction', unit: 'MiB', better: 'lower', value: before.dbSize / 2 ** 20 },
          { key: 'kube.db.after', label: 'db size (Status) after compact + defrag', unit: 'MiB', better: 'lower', value: after.dbSize / 2 ** 20 },
        ];
      } finally {
        conn.close();
      }
    });
  },
};

/** 3 members, 100,000 × 1 KB: leader RSS; a 4th member added and caught up; a follower restarted. */
export const memoryCluster: Scenario = {
  name: 'memory-cluster',
  title: '6d. memory, 3 members, 100,000 keys × 1 KB: leader RSS, a 4th member catching up, follower restart',
  seconds: (quick) => (quick ? 40 : 100),
  async run(ctx) {
    return withCluster(ctx, { size: 3 }, async (cluster) => {
      const leader = await cluster.leader();
      const keys = dur(ctx, 100_000, 20_000);
      const rate = await loadInto(ctx, leader, 'mem/', keys, 1024);
      await sleep(2000);
      const leaderRss = rssMb(cluster, leader);
      const target = (await cluster.client(leader).status(5000)).header.revision;
      const last = encodeRange(bulkKey('mem/', keys - 1), { serializable: true });
      let leaderCatchUpMb = leaderRss;
      // The split at the peak: anonymous memory (heap, buffers) and mapped file pages (LevelDB's or bbolt's files).
      const atRest = sampleProc(cluster.pid(leader) ?? -1);
      let peakSplit = { anonMb: mb(atRest?.rssAnonKb), fileMb: mb(atRest?.rssFileKb) };
      const t0 = performance.now();
      const joiner = await cluster.addMember();
      let caughtUpMs = NaN;
      while (performance.now() - t0 < 120_000) {
        const sample = sampleProc(cluster.pid(leader) ?? -1);
        if (sample !== undefined && mb(sample.rssKb) > leaderCatchUpMb) {
          leaderCatchUpMb = mb(sample.rssKb);
          peakSplit = { anonMb: mb(sample.rssAnonKb), fileMb: mb(sample.rssFileKb) };
        }
        if (!cluster.alive(joiner)) throw new Error(`${joiner.name} exited:\n${joiner.output.slice(-20).join('\n')}`);
        try {
          const r = await cluster.client(joiner).range(last, 1000);
          if (r.kvs === 1 && r.header.revision >= target) {
            caughtUpMs = performance.now() - t0;
            break;
          }
        } catch { /* not serving yet */ }
        await sleep(100);
      }
      if (Number.isNaN(caughtUpMs)) throw new Error(`${joiner.name} did not catch up within 120 s`);
      const follower = cluster.members.find((m) => m !== leader && m !== joiner)!;
      await cluster.stopMember(follower);
      const restartMs = await cluster.restartMember(follower);
      ctx.log(`  ${cluster.describe()}: leader ${leaderRss.toFixed(0)} MB, ${leaderCatchUpMb.toFixed(0)} MB during catch-up (anon ${peakSplit.anonMb.toFixed(0)}, file ${peakSplit.fileMb.toFixed(0)}); 4th member caught up in ${caughtUpMs.toFixed(0)} ms; follower restart ${restartMs.toFixed(0)} ms`);
      return [
        { key: 'mem3.load', label: 'bulk load (Txn of 100 puts of 1 KB)', unit: 'keys/s', better: 'higher', value: rate },
        { key: 'mem3.leader', label: `leader RSS after ${keys.toLocaleString('en-US')} × 1 KB`, unit: 'MB', better: 'lower', value: leaderRss },
        { key: 'mem3.catchup', label: 'a 4th member added: caught up after', unit: 'ms', better: 'lower', value: caughtUpMs },
        { key: 'mem3.catchup.rss', label: 'leader RSS during the catch-up (max)', unit: 'MB', better: 'lower', value: leaderCatchUpMb },
        { key: 'mem3.catchup.rss.file', label: 'same, of which mapped file pages', unit: 'MB', better: 'lower', value: peakSplit.fileMb },
        { key: 'mem3.restart', label: 'restarted follower serves a linearizable get after', unit: 'ms', better: 'lower', value: restartMs },
      ];
    });
  },
};

/** Clients of the cgroup scenario's second phase (issue 22: as an apiserver offers load, not paced). */
const cgroupClients = 256;

/**
 * 1 member under a 512 MiB memory cgroup (page cache counts): 100,000 × 1 KB through Txns, then
 * 1,000,000 × 100 B single puts from 256 concurrent clients as fast as answers come. Passing means ≥ 99 %
 * acked and still serving: what grows with the offered load must be bounded and push back.
 */
export const memoryCgroup: Scenario = {
  name: 'memory-cgroup',
  title: `6e. 1 member under a 512 MiB memory cgroup: 100,000 × 1 KB, then 1,000,000 × 100 B from ${cgroupClients} clients`,
  seconds: (quick) => (quick ? 60 : 400),
  async run(ctx) {
    return withCluster(ctx, { size: 1, memoryCap: true }, async (cluster) => {
      const m = cluster.members[0]!;
      ctx.log(`  caps: ${m.caps?.describe ?? 'none'}`);
      const conns = openConnections(m.clientUrl, connectionsFor(cgroupClients));
      let loaded = 0;
      let offered = 0;
      let failed = 0;
      let failure = '';
      let rate = NaN;
      try {
        const bulk = await bulkLoad(conns[0]!, 'mem/', dur(ctx, 100_000, 20_000), 1024);
        loaded += bulk.loaded;
        offered += dur(ctx, 100_000, 20_000);
        if (bulk.error) failure = bulk.error;
        else {
          const count = dur(ctx, 1_000_000, 100_000);
          const r = await concurrentPuts(conns, 'small/', count, 100, cgroupClients);
          loaded += r.loaded;
          offered += count;
          failed = r.failed;
          rate = r.keysPerSec;
          if (r.error) failure = r.error;
        }
      } finally {
        for (const c of conns) c.close();
      }
      await sleep(1500);
      const oom = m.caps?.oomKills() ?? 0;
      const alive = cluster.alive(m);
      const peak = alive ? peakMb(cluster, m) : NaN;
      ctx.log(`  ${cluster.describe()}: ${loaded} of ${offered} keys acked (${failed} failed), ${rate.toFixed(0)} puts/s, ${alive ? 'alive' : 'DEAD'}, ${oom} OOM kills, peak RSS ${peak.toFixed(0)} MB${failure ? `; first failure: ${failure.slice(0, 200)}` : ''}`);
      return [
        { key: 'cg.acked', label: 'keys acked', unit: '%', better: 'higher', value: (100 * loaded) / offered },
        { key: 'cg.rate', label: `puts/s from ${cgroupClients} clients`, unit: 'puts/s', better: 'higher', value: rate },
        { key: 'cg.alive', label: 'serving afterwards', unit: '', better: 'higher', value: alive ? 1 : 0 },
        { key: 'cg.oom', label: 'OOM kills', unit: '', better: 'lower', value: oom },
        { key: 'cg.peak', label: 'peak RSS', unit: 'MB', better: 'lower', value: peak },
      ];
    });
  },
};

export const memoryScenarios: Scenario[] = [memorySingle, memoryMillion, memoryKube, memoryCluster, memoryCgroup];
