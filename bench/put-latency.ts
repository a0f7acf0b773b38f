/**
 * One closed-loop client doing 256-byte puts on a single member, etcd and etcetera alternating (A B A B),
 * each on a fresh data dir: the p50 of issue 15's "1-client put p50 ≤ 1.2× etcd", quicker than the full
 * bench:compare puts scenario, for iterating on the request path. Expectation: etcetera's p50 ≤ 1.2× etcd's.
 *
 *   npx tsx bench/put-latency.ts [--reps 3] [--seconds 5] [--system etcetera] [--cpu-prof DIR]
 */
import { Cluster, type System } from './compare/cluster.js';
import { RawClient } from './compare/client.js';
import { closedLoop } from './compare/load.js';
import { sampleProc } from './compare/proc.js';
import { encodePut } from './compare/wire.js';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const reps = Number(arg('reps', '3'));
const seconds = Number(arg('seconds', '5'));
const only = arg('system', '');
const cpuProfDir = arg('cpu-prof', '');
const systems: System[] = only === 'etcd' || only === 'etcetera' ? [only] : ['etcd', 'etcetera'];

const value = Buffer.alloc(256, 0x61);
const requests = Array.from({ length: 1000 }, (_, i) => encodePut(Buffer.from(`bench/${String(i).padStart(6, '0')}`), value));
const p50s: Record<string, number[]> = {};
const cpus: Record<string, number[]> = {};
for (let rep = 0; rep < reps; rep++) {
  for (const system of systems) {
    const cluster = await Cluster.start(system, { size: 1, ...(cpuProfDir && system === 'etcetera' ? { cpuProfDir } : {}) });
    const leader = await cluster.leader();
    const client = new RawClient(leader.clientUrl);
    const pid = cluster.pid(leader) ?? -1;
    try {
      const before = sampleProc(pid);
      const r = await closedLoop({ clients: 1, durationMs: seconds * 1000, warmupMs: 1000, op: (_c, seq) => client.put(requests[seq % requests.length]!, 5000) });
      const after = sampleProc(pid);
      // Server CPU per put (10 ms clock ticks over thousands of puts), less noisy than latency on a shared machine.
      const cpuUsPerPut = before && after ? ((after.cpuMs - before.cpuMs) * 1000) / r.opsAll : NaN;
      (p50s[system] ??= []).push(r.p50Ms);
      (cpus[system] ??= []).push(cpuUsPerPut);
      console.log(`${system.padEnd(8)} ${r.opsPerSec.toFixed(0)} puts/s, p50 ${r.p50Ms.toFixed(3)} ms, p99 ${r.p99Ms.toFixed(3)} ms, ` +
        `server CPU ${cpuUsPerPut.toFixed(0)} µs/put, ${r.errors} errors`);
    } finally {
      client.close();
      await cluster.stop();
    }
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (const [system, xs] of Object.entries(p50s)) {
  console.log(`${system.padEnd(8)} p50 median ${median(xs).toFixed(3)} ms (${xs.map((x) => x.toFixed(3)).join(', ')}), ` +
    `server CPU median ${median(cpus[system]!).toFixed(0)} µs/put`);
}
if (p50s.etcd && p50s.etcetera) console.log(`etcetera / etcd p50: ${(median(p50s.etcetera) / median(p50s.etcd)).toFixed(2)}×`);
