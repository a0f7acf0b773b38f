/**
 * Read scenarios of issue 6: (5) linearizable and serializable gets, a 1,000-key range, watch fan-out to 100
 * watchers. Memory scenarios are in scenarios-memory.ts.
 */
import { performance } from 'node:perf_hooks';
import { RawClient, type WatchStream } from './client.js';
import type { Cluster } from './cluster.js';
import { closedLoop, paced, summarize } from './load.js';
import { dur, mean, type Measure, type RunContext, type Scenario } from './measure.js';
import { sampleProc } from './proc.js';
import { connectionsFor, openConnections, withCluster } from './scenarios-write.js';
import { bulkLoad } from './bulk.js';
import { encodePut, encodeRange, encodeWatchCreate } from './wire.js';

const timeoutMs = 10_000;

async function readRun(ctx: RunContext, label: string, key: string, clients: number, endpoint: string, request: Buffer): Promise<Measure[]> {
  const conns = openConnections(endpoint, connectionsFor(clients));
  try {
    const r = await closedLoop({
      clients, durationMs: dur(ctx, 5000, 1000), warmupMs: dur(ctx, 500, 200),
      op: (c) => conns[c % conns.length]!.range(request, timeoutMs),
    });
    ctx.log(`  ${label}: ${r.opsPerSec.toFixed(0)}/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, ${r.errors} errors${r.firstError ? ` (${r.firstError})` : ''}`);
    return [
      { key: `${key}.rate`, label: `${label}: ops/s`, unit: '/s', better: 'higher', value: r.opsPerSec },
      { key: `${key}.p99`, label: `${label}: p99`, unit: 'ms', better: 'lower', value: r.p99Ms },
    ];
  } finally {
    for (const c of conns) c.close();
  }
}

/** 100 watch streams (one watcher each, spread over the members) on a prefix; a paced writer puts under it. */
async function watchFanOut(ctx: RunContext, cluster: Cluster): Promise<Measure[]> {
  const watchers = 100;
  const putsPerSec = 200;
  const conns = cluster.members.map((m) => new RawClient(m.clientUrl));
  const streams: WatchStream[] = [];
  const latencies: number[] = [];
  let created = 0;
  let delivered = 0;
  let streamErrors = 0;
  const durationMs = dur(ctx, 5000, 1500);
  let measuring = false;
  try {
    for (let i = 0; i < watchers; i++) {
      const s = conns[i % conns.length]!.watchStream((r) => {
        if (r.created) created++;
        for (const v of r.values) {
          if (v.length < 8 || !measuring) continue;
          delivered++;
          latencies.push(performance.now() - v.readDoubleLE(0));
        }
      }, () => streamErrors++);
      s.send(encodeWatchCreate(Buffer.from('watch/'), Buffer.from('watch0')));
      streams.push(s);
    }
    const deadline = performance.now() + 10_000;
    while (created < watchers && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (created < watchers) throw new Error(`only ${created} of ${watchers} watchers created`);
    const leader = await cluster.leader();
    const writer = new RawClient(leader.clientUrl);
    measuring = true;
    const w = await paced({
      ratePerSec: putsPerSec, durationMs, maxInFlight: 64,
      op: (seq) => {
        const value = Buffer.alloc(64);
        value.writeDoubleLE(performance.now(), 0);
        return writer.put(encodePut(Buffer.from(`watch/${seq % 100}`), value), timeoutMs);
      },
    });
    // Events still in flight when the writer stops are given a moment to arrive.
    await new Promise((r) => setTimeout(r, 1000));
    writer.close();
    const expected = w.ok * watchers;
    // Offered-rate window: events that arrive during the settle second belong to puts sent inside it.
    const seconds = durationMs / 1000;
    const l = summarize(latencies);
    ctx.log(`  watch fan-out: ${w.ok} puts, ${delivered}/${expected} events (${(delivered / seconds).toFixed(0)}/s), delivery p50 ${l.p50Ms.toFixed(2)} ms, p99 ${l.p99Ms.toFixed(2)} ms, ${streamErrors} stream errors`);
    return [
      { key: 'watch.rate', label: `watch, 100 watchers × ${putsPerSec} puts/s: events/s`, unit: '/s', better: 'higher', value: delivered / seconds },
      { key: 'watch.lost', label: 'watch: events missing', unit: '', better: 'lower', value: expected - delivered },
      { key: 'watch.p50', label: 'watch: delivery p50', unit: 'ms', better: 'lower', value: l.p50Ms },
      { key: 'watch.p99', label: 'watch: delivery p99', unit: 'ms', better: 'lower', value: l.p99Ms },
    ];
  } finally {
    for (const s of streams) s.close();
    for (const c of conns) c.close();
  }
}

export const reads: Scenario = {
  name: 'reads',
  title: '5. gets, a 1,000-key range, watch fan-out (3 members)',
  seconds: (quick) => (quick ? 12 : 30),
  async run(ctx) {
    return withCluster(ctx, { size: 3 }, async (cluster) => {
      const leader = await cluster.leader();
      const loader = new RawClient(leader.clientUrl);
      try {
        const r = await bulkLoad(loader, 'range/', 1000, 256, { constant: true });
        if (r.error) throw new Error(`loading failed: ${r.error}`);
      } finally {
        loader.close();
      }
      const follower = cluster.members.find((m) => m !== leader) ?? leader;
      const one = Buffer.from('range/0000500');
      const out: Measure[] = [];
      out.push(...(await readRun(ctx, 'linearizable get, 16 clients, leader', 'get.lin', 16, leader.clientUrl, encodeRange(one))));
      out.push(...(await readRun(ctx, 'linearizable get, 16 clients, follower', 'get.linf', 16, follower.clientUrl, encodeRange(one))));
      out.push(...(await readRun(ctx, 'serializable get, 16 clients', 'get.ser', 16, leader.clientUrl, encodeRange(one, { serializable: true }))));
      const all = encodeRange(Buffer.from('range/'), { rangeEnd: Buffer.from('range0') });
      out.push(...(await readRun(ctx, '1,000-key range (256 KB), 4 clients', 'range1k', 4, leader.clientUrl, all)));
      out.push(...(await watchFanOut(ctx, cluster)));
      return out;
    });
  },
};

/** The watch fan-out alone (also part of `reads`): for profiling delivery with --cpu-prof. */
export const watchOnly: Scenario = {
  name: 'watch',
  title: '5w. watch fan-out alone (3 members)',
  seconds: (quick) => (quick ? 5 : 10),
  run: (ctx) => withCluster(ctx, { size: 3 }, (cluster) => watchFanOut(ctx, cluster)),
};
