/**
 * Private memory at rest with small data (issue 34): RssAnon (the process's own memory; the rest of VmRSS is
 * mapped file pages, mostly the node or etcd binary, shared and reclaimable) of every member of
 *   - 1 member,
 *   - 3 members (leader and followers),
 *   - 3 members whose third is a witness (etcetera only; etcd's third is a full member),
 * for etcd 3.4 and etcetera in the same run, alternating (A B A B). Small data: 200 keys of 256 B, then 7
 * writes/s for --rest-s seconds (bench:compare's at-rest load), then 3 s without requests, then the sample.
 *
 *   npx tsx bench/rest-memory.ts [--runs 2] [--rest-s 20] [--systems etcd,etcetera] [--shapes 1,3,witness]
 *
 * ETCBENCH_ETCETERA_CLI=/other/dist/src/main/cli.js measures another build (before/after);
 * ETCBENCH_ETCETERA_NODE_ARGS='--flag' gives every etcetera member Node flags. Prints a markdown table, with
 * each member's CPU (user + system, ms per second) from the first paced write to the sample: the at-rest cost.
 */
import { Cluster, type System } from './compare/cluster.js';
import { RawClient } from './compare/client.js';
import { paced } from './compare/load.js';
import { sampleProc } from './compare/proc.js';
import { encodePut } from './compare/wire.js';

type Shape = '1' | '3' | 'witness';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

const runs = Number(arg('runs', '2'));
const restMs = Number(arg('rest-s', '20')) * 1000;
const systems = arg('systems', 'etcd,etcetera').split(',') as System[];
const shapes = arg('shapes', '1,3,witness').split(',') as Shape[];
const keys = 200;
const value = Buffer.alloc(256, 0x61);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Row { system: System; shape: Shape; role: string; run: number; rssMb: number; anonMb: number; fileMb: number; cpuMsPerSec: number }

async function measure(system: System, shape: Shape, run: number): Promise<Row[]> {
  const cluster = await Cluster.start(system, { size: shape === '1' ? 1 : 3, ...(shape === 'witness' ? { witness: true } : {}) });
  let before: ReturnType<typeof sampleProc>[] = [];
  try {
    const leader = await cluster.leader();
    const conn = new RawClient(leader.clientUrl);
    try {
      for (let i = 0; i < keys; i++) await conn.put(encodePut(Buffer.from(`registry/small/${i}`), value), 5000);
      before = cluster.members.map((m) => sampleProc(cluster.pid(m) ?? -1));
      await paced({ ratePerSec: 7, durationMs: restMs, maxInFlight: 100, op: (seq) => conn.put(encodePut(Buffer.from(`registry/leases/${seq % 50}`), value), 5000) });
    } finally {
      conn.close();
    }
    await sleep(3000);
    return cluster.members.map((m, i) => {
      const s = sampleProc(cluster.pid(m) ?? -1);
      const b = before[i];
      if (!s || !b) throw new Error(`${system} ${m.name} died`);
      // CPU over the paced writes and the quiet seconds after them: the at-rest cost of the same run.
      const cpuMsPerSec = ((s.cpuMs - b.cpuMs) * 1000) / (s.atMs - b.atMs);
      const role = m === leader ? 'leader' : (m.witness === true || (shape === 'witness' && m === cluster.members[2])) ? 'third voter' : 'follower';
      return { system, shape, role, run, rssMb: s.rssKb / 1024, anonMb: s.rssAnonKb / 1024, fileMb: s.rssFileKb / 1024, cpuMsPerSec };
    });
  } finally {
    await cluster.stop();
  }
}

const rows: Row[] = [];
for (let run = 1; run <= runs; run++) {
  for (const shape of shapes) {
    for (const system of systems) {
      if (shape === 'witness' && system === 'etcd' && !shapes.includes('3')) continue;
      const r = await measure(system, shape, run);
      for (const x of r) process.stderr.write(`run ${run} ${system} ${shape} ${x.role}: RSS ${x.rssMb.toFixed(1)} MB, RssAnon ${x.anonMb.toFixed(1)} MB, CPU ${x.cpuMsPerSec.toFixed(1)} ms/s\n`);
      rows.push(...r);
    }
  }
}

const fmt = (xs: number[]): string => `${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(1)} (${xs.map((x) => x.toFixed(1)).join(', ')})`;
process.stdout.write(`| system | cluster | member | RssAnon MB, mean (each) | RSS MB, mean (each) | CPU ms/s, mean (each) |\n|---|---|---|---|---|---|\n`);
for (const shape of shapes) {
  for (const system of systems) {
    for (const role of ['leader', 'follower', 'third voter']) {
      const sel = rows.filter((r) => r.system === system && r.shape === shape && r.role === role);
      if (sel.length === 0) continue;
      process.stdout.write(`| ${system} | ${shape === 'witness' ? '3, third a witness' : `${shape} member${shape === '1' ? '' : 's'}`} | ${role} | ${fmt(sel.map((r) => r.anonMb))} | ${fmt(sel.map((r) => r.rssMb))} | ${fmt(sel.map((r) => r.cpuMsPerSec))} |\n`);
    }
  }
}
process.exit(0);
