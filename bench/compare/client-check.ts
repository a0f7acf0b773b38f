/**
 * Is the load generator's hand-rolled codec worth it? The same closed loop of 256-byte puts against one etcd
 * member, through the raw client (static codec, grpc-js) and through the etcd3 npm client, with the
 * generator's own CPU time per request. Measured 2026-11-29: both ~100-125 µs of generator CPU per put, i.e.
 * grpc-js dominates and the codec saves little (see bench/compare/README.md).
 *
 * Run: npx tsx bench/compare/client-check.ts [--clients 16] [--duration-ms 4000]
 */
import { parseArgs } from 'node:util';
import { Etcd3 } from 'etcd3';
import { Cluster } from './cluster.js';
import { closedLoop, type ClosedLoopResult } from './load.js';
import { openConnections } from './scenarios-write.js';
import { encodePut } from './wire.js';

const { values: args } = parseArgs({
  options: { clients: { type: 'string', default: '16' }, 'duration-ms': { type: 'string', default: '4000' } },
});
const clients = Number(args.clients);
const durationMs = Number(args['duration-ms']);
const value = Buffer.alloc(256, 0x61);

async function measure(name: string, op: (c: number, seq: number) => Promise<unknown>): Promise<void> {
  const cpu0 = process.cpuUsage();
  const r: ClosedLoopResult = await closedLoop({ clients, durationMs, warmupMs: 500, op });
  const cpu = process.cpuUsage(cpu0);
  const cpuUsPerOp = (cpu.user + cpu.system) / Math.max(1, r.ops);
  console.log(`${name.padEnd(24)} ${r.opsPerSec.toFixed(0).padStart(7)} puts/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms  generator CPU ${cpuUsPerOp.toFixed(0)} µs/put  errors ${r.errors}`);
}

const cluster = await Cluster.start('etcd', { size: 1 });
try {
  const endpoint = cluster.members[0]!.clientUrl;
  for (let round = 0; round < 2; round++) {
    const raw = openConnections(endpoint, 1); // one connection, as etcd3 uses
    await measure('raw (static codec)', (c, seq) => raw[c % raw.length]!.put(encodePut(Buffer.from(`k/${(c * 7919 + seq) % 10000}`), value), 10_000));
    for (const r of raw) r.close();
    const etcd3 = new Etcd3({ hosts: endpoint });
    await measure('etcd3 npm client', (c, seq) => etcd3.put(`k/${(c * 7919 + seq) % 10000}`).value(value).exec());
    etcd3.close();
  }
} finally {
  await cluster.stop();
}
process.exit(0);
