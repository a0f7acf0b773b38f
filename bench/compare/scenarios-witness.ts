/**
 * Issue 24: what the third voter costs. etcetera's is a witness (`etcetera witness`: votes, keeps the Raft
 * log's tail, holds no data); etcd's is a full member, the one a witness replaces. Three members on
 * 127.0.0.1, every fsync delayed 20 ms (strace, as the slow-fsync scenario), 16 clients writing 1 KiB values
 * over 10,000 keys to the leader; then, at rest, the third voter's RSS (and its anonymous part, the memory
 * that is the process's own: the rest is mapped file pages, mostly Node's own binary, shared and reclaimable)
 * and its data directory's size on disk, beside a data member's.
 *
 * The floor: Node alone (`node -e`, a timer) is measured in the same run, since the issue's 40 MB is close
 * to it (2026-12-03, Node 20 on x86_64: ~40 MB, of which ~34 MB the node binary's pages).
 */
import { spawn } from 'node:child_process';
import { readdirSync, lstatSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster, Member } from './cluster.js';
import { closedLoop } from './load.js';
import { dur, type Measure, type Scenario } from './measure.js';
import { sampleProc } from './proc.js';
import { connectionsFor, openConnections, withCluster } from './scenarios-write.js';
import { encodePut } from './wire.js';

const clients = 16;
const keySpace = 10_000;
const valueBytes = 1024;
const requestTimeoutMs = 10_000;
const mb = (kb: number | undefined): number => (kb ?? NaN) / 1024;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Bytes the files under `dir` occupy on disk (allocated blocks, as `du`: a preallocated segment counts whole). */
export function diskBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    total += st.blocks * 512;
    if (st.isDirectory()) total += diskBytes(path);
  }
  return total;
}

/** RSS of a Node process that does nothing but wait: the floor under any Node program on this machine. */
export async function nodeAloneRssKb(): Promise<number> {
  const script = "setTimeout(() => process.stdout.write(/VmRSS:\\s+(\\d+)/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1]), 2000)";
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    p.once('error', reject);
    p.once('exit', () => resolve(Number(out)));
  });
}

/** `etcetera_witness_log_entries` from the witness's /metrics. */
async function witnessLogEntries(m: Member): Promise<number> {
  const text = await (await fetch(`${m.clientUrl}/metrics`, { signal: AbortSignal.timeout(3000) })).text();
  return Number(/^etcetera_witness_log_entries (\d+)/m.exec(text)?.[1] ?? NaN);
}

export const witnessScenario: Scenario = {
  name: 'witness',
  title: '8. the third voter (etcetera: a witness; etcd: a full member), 3 members, every fsync delayed 20 ms',
  seconds: (quick) => (quick ? 30 : 60),
  async run(ctx) {
    return withCluster(ctx, { size: 3, fsyncDelayUs: 20_000, witness: true }, async (cluster: Cluster) => {
      const leader = await cluster.leader();
      // etcetera's witness never stays leader; etcd's third voter is any follower.
      const third = cluster.members.find((m) => m.witness) ?? cluster.members.filter((m) => m !== leader).at(-1)!;
      const conns = openConnections(leader.clientUrl, connectionsFor(clients));
      const value = Buffer.alloc(valueBytes, 0x61);
      const requests = Array.from({ length: keySpace }, (_, i) => encodePut(Buffer.from(`wit/${String(i).padStart(6, '0')}`), value));
      const cpuBefore = sampleProc(cluster.pid(third) ?? -1)?.cpuMs ?? NaN;
      let r;
      try {
        r = await closedLoop({
          clients,
          durationMs: dur(ctx, 30_000, 5_000),
          warmupMs: dur(ctx, 1000, 300),
          op: (c, seq) => conns[c % conns.length]!.put(requests[(c * 7919 + seq) % keySpace]!, requestTimeoutMs),
        });
      } finally {
        for (const c of conns) c.close();
      }
      if (r.errors > 0) throw new Error(`${r.errors} puts failed: ${r.firstError}`);
      // Heartbeats carry the data members' durable index to the witness; a few let it drop what they hold.
      await sleep(3000);
      const t = sampleProc(cluster.pid(third) ?? -1);
      const cpuMsPerKput = t === undefined ? NaN : ((t.cpuMs - cpuBefore) * 1000) / r.opsAll;
      const d = sampleProc(cluster.pid(leader) ?? -1);
      if (t === undefined || d === undefined) throw new Error('a member exited');
      const thirdDisk = diskBytes(third.dataDir) / 2 ** 20;
      const dataDisk = diskBytes(leader.dataDir) / 2 ** 20;
      const floorKb = ctx.system === 'etcetera' ? await nodeAloneRssKb() : NaN;
      const entries = third.witness ? await witnessLogEntries(third) : NaN;
      const written = (r.opsAll * valueBytes) / 2 ** 20;
      ctx.log(`  ${cluster.describe()}${third.witness ? ' (m3 a witness)' : ''}: ${r.opsPerSec.toFixed(0)} puts/s (${written.toFixed(0)} MiB of values); third voter RSS ${mb(t.rssKb).toFixed(1)} MB (anon ${mb(t.rssAnonKb).toFixed(1)}, file ${mb(t.rssFileKb).toFixed(1)}, peak ${mb(t.peakRssKb).toFixed(1)}), disk ${thirdDisk.toFixed(2)} MiB, CPU ${cpuMsPerKput.toFixed(0)} ms per 1,000 puts${third.witness ? `, ${entries} log entries held` : ''}; data leader RSS ${mb(d.rssKb).toFixed(1)} MB, disk ${dataDisk.toFixed(1)} MiB${ctx.system === 'etcetera' ? `; node alone ${mb(floorKb).toFixed(1)} MB` : ''}`);
      return [
        { key: 'wit.rate', label: `puts of 1 KiB, ${clients} clients`, unit: 'puts/s', better: 'higher', value: r.opsPerSec },
        { key: 'wit.third.rss', label: 'third voter RSS at rest after the load', unit: 'MB', better: 'lower', value: mb(t.rssKb) },
        { key: 'wit.third.anon', label: 'same, its anonymous memory (RssAnon)', unit: 'MB', better: 'lower', value: mb(t.rssAnonKb) },
        { key: 'wit.third.peak', label: 'third voter peak RSS', unit: 'MB', better: 'lower', value: mb(t.peakRssKb) },
        { key: 'wit.third.cpu', label: 'third voter CPU per 1,000 puts (the 3 s at rest included)', unit: 'ms', better: 'lower', value: cpuMsPerKput },
        { key: 'wit.third.disk', label: 'third voter data directory on disk', unit: 'MiB', better: 'lower', value: thirdDisk },
        { key: 'wit.data.rss', label: 'data leader RSS at rest', unit: 'MB', better: 'lower', value: mb(d.rssKb) },
        { key: 'wit.data.disk', label: 'data leader data directory on disk', unit: 'MiB', better: 'lower', value: dataDisk },
        { key: 'wit.node.rss', label: 'Node alone (node -e, a timer): the floor', unit: 'MB', better: 'lower', value: mb(floorKb) },
      ];
    });
  },
};
