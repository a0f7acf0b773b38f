/**
 * One chaos run: a fresh 3-member cluster, the kube-shaped workload with its watchers and compaction loop,
 * one fault (chosen by the seed unless named), then convergence and every checker. Everything the run
 * started is killed before it returns, whatever happened.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Etcd3 } from 'etcd3';
import { Prng } from '../../src/base/index.js';
import { checkHistory, type CheckReport } from './check.js';
import { Cluster, rawClient } from './cluster.js';
import { faults, type Fault } from './faults.js';
import { Recorder, type History } from './history.js';
import { catchUp, sleep, WatchRunner } from './watchers.js';
import { leaseKeeper } from './leases.js';
import { compactionLoop, KvClient, podPrefix, registryPrefix } from './workload.js';
import { deadline } from './wire.js';

export interface RunOptions {
  seed: number;
  /** A fault name (see faults.ts); default: chosen by the seed. */
  fault?: string;
  /** Traffic before the fault and after it healed. */
  warmupMs?: number;
  cooldownMs?: number;
  clients?: number;
  keys?: number;
  /** Hard bound on the whole run. */
  timeoutMs?: number;
  /** Election timeout of the members (heartbeat = a tenth of it); default 1000 ms. */
  electionMs?: number;
  /** Print the log as it goes. */
  verbose?: boolean;
}

export interface RunResult {
  seed: number;
  fault: string;
  ok: boolean;
  violations: string[];
  notes: string[];
  opsPerSec: number;
  report?: CheckReport;
  /** The recorded history and its final revision (for the self-test). */
  history?: History;
  finalRev?: number;
  durationMs: number;
  replay: string;
  /** Where the history and member logs were saved when the run failed. */
  saved?: string;
}

function replayCommand(o: RunOptions): string {
  const flags = [['fault', o.fault], ['election-ms', o.electionMs], ['keys', o.keys], ['clients', o.clients]].filter(([, v]) => v !== undefined);
  return `npm run chaos -- --seed ${o.seed} --runs 1${flags.map(([k, v]) => ` --${k} ${v}`).join('')}`;
}

export function chooseFault(seed: number, name?: string): Fault {
  if (name !== undefined) {
    const f = faults.find((x) => x.name === name);
    if (f === undefined) throw new Error(`unknown fault ${name}; known: ${faults.map((x) => x.name).join(', ')}`);
    return f;
  }
  return faults[new Prng(seed).int(faults.length)]!;
}

export async function runOnce(o: RunOptions): Promise<RunResult> {
  const fault = chooseFault(o.seed, o.fault);
  const t0 = Date.now();
  const log: string[] = [];
  const say = (l: string): void => {
    const line = `[${((Date.now() - t0) / 1000).toFixed(1)}s] ${l}`;
    log.push(line);
    if (o.verbose) console.log(line);
  };
  const rng = new Prng(o.seed);
  rng.int(faults.length); // the draw chooseFault made, so the rest of the stream is the same either way
  // A low snapshot count makes members compact their logs often, so restarted members catch up by snapshot.
  const electionMs = o.electionMs ?? 1000;
  const cluster = new Cluster({ rng: rng.fork(), log: say, snapshotCount: 300, electionMs, heartbeatMs: Math.max(10, Math.round(electionMs / 10)) });
  const result: RunResult = { seed: o.seed, fault: fault.name, ok: false, violations: [], notes: [], opsPerSec: 0, durationMs: 0, replay: replayCommand(o) };
  const state: { closers: (() => void)[]; rec?: Recorder } = { closers: [] };
  try {
    const timeoutMs = o.timeoutMs ?? 150_000;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`run exceeded ${timeoutMs} ms`)), timeoutMs)));
    try {
      await Promise.race([body(o, fault, cluster, rng, say, result, state), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  } catch (e) {
    result.violations.push(`run error: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
  } finally {
    for (const close of state.closers) close();
    if (result.violations.length > 0) result.saved = save(o.seed, log, cluster, result, state.rec);
    await cluster.stop();
  }
  result.ok = result.violations.length === 0;
  result.durationMs = Date.now() - t0;
  return result;
}

async function body(o: RunOptions, fault: Fault, cluster: Cluster, rng: Prng, say: (l: string) => void, result: RunResult, state: { closers: (() => void)[]; rec?: Recorder }): Promise<void> {
  await cluster.start(3);
  say(`cluster up: ${cluster.members.map((m) => `${m.name}=${m.id}`).join(' ')}; fault ${fault.name}`);
  const rec = new Recorder();
  state.rec = rec;
  const etcds: Etcd3[] = [];
  const client = (url: string | string[]): Etcd3 => {
    const c = rawClient(url);
    etcds.push(c);
    return c;
  };
  state.closers.push(() => etcds.forEach((c) => c.close()));
  const urls = () => cluster.members.map((m) => cluster.clientUrl(m));
  const n = o.clients ?? 9;
  const workers = Array.from({ length: n }, (_, i) => new KvClient({ id: i, etcd: client(urls()[i % 3]!), rec, rng: rng.fork(), keys: o.keys ?? 30, timeoutMs: 2000 }));
  const memberClients = () => cluster.alive().map((m) => ({ name: m.name, etcd: client(cluster.clientUrl(m)) }));
  const reference = new WatchRunner({ rec, client: 100, members: memberClients, log: say });
  const reflectors = [101, 102].map((id, i) => new WatchRunner({
    rec, client: id, members: () => memberClients().slice(i % 3).concat(memberClients().slice(0, i % 3)), prefix: registryPrefix, log: say,
    lister: new KvClient({ id: id + 100, etcd: client(urls()), rec, rng: rng.fork(), keys: 1, timeoutMs: 3000 }),
  }));
  const runners = [reference, ...reflectors];
  state.closers.push(() => runners.forEach((w) => w.stop()));
  await reference.start();
  await Promise.all(reflectors.map((w) => w.start()));
  let stopped = false;
  state.closers.push(() => (stopped = true)); // also when the run timed out: no client outlives its run
  const traffic = workers.map((w) => w.run(() => stopped));
  const keeper = leaseKeeper({ rec, members: () => cluster.alive().map((m) => client(cluster.clientUrl(m))), ttlSeconds: 3, stopped: () => stopped, log: say });
  const compactor = compactionLoop({ etcd: () => client(urls()), rec, client: 300, intervalMs: 4000, stopped: () => stopped, log: say });
  const progress = setInterval(() => runners.forEach((w) => w.requestProgress()), 1000);
  state.closers.push(() => clearInterval(progress));
  const trafficStart = Date.now();
  await sleep(o.warmupMs ?? 2000);
  const warm = workers.reduce((s, w) => s + w.done, 0);
  say(`warm-up: ${warm} ops in ${Date.now() - trafficStart} ms; injecting ${fault.name}`);
  const ctx = { cluster, rng: rng.fork(), log: say, notes: result.notes };
  await fault.inject(ctx);
  say('fault over');
  await sleep(o.cooldownMs ?? 2500);
  stopped = true;
  await Promise.all([...traffic, compactor, keeper]);
  const trafficMs = Date.now() - trafficStart;
  const done = workers.reduce((s, w) => s + w.done, 0);
  result.opsPerSec = Math.round((done / trafficMs) * 1000);
  say(`leases kept: ${rec.leases.length}, renewals ${rec.leases.reduce((s, l) => s + l.renewals.length, 0)}`);
  say(`traffic: ${done} ok, ${workers.reduce((s, w) => s + w.failed, 0)} failed, ${result.opsPerSec} ops/s`);
  await finish(o, cluster, rec, workers, reflectors, runners, client, say, result);
}

async function finish(
  o: RunOptions, cluster: Cluster, rec: Recorder, workers: KvClient[], reflectors: WatchRunner[], runners: WatchRunner[],
  client: (u: string) => Etcd3, say: (l: string) => void, result: RunResult,
): Promise<void> {
  const leader = await cluster.leader(30_000);
  const finalClient = new KvClient({ id: 400, etcd: client(cluster.clientUrl(leader)), rec, rng: new Prng(o.seed), keys: 1, timeoutMs: 5000 });
  const last = await finalClient.list(podPrefix, 1000);
  if (last.output?.type !== 'list') throw new Error(`final list failed: ${JSON.stringify(last.output)}`);
  const finalRev = last.output.rev;
  const behind = await catchUp(runners, finalRev, 20_000);
  for (const w of behind) result.violations.push(`L4 liveness: watch client ${w.session?.client} delivered only through ${w.delivered()} of ${finalRev}`);
  for (const w of reflectors) {
    const lister = new KvClient({ id: 401 + reflectors.indexOf(w), etcd: client(cluster.clientUrl(leader)), rec, rng: new Prng(1), keys: 1, timeoutMs: 5000 });
    if (w.delivered() >= finalRev) await lister.list(registryPrefix, 50, w.delivered());
  }
  await convergence(cluster, finalRev, say, result);
  runners.forEach((w) => w.stop());
  const report = checkHistory(rec.history(), { finalRev });
  result.report = report;
  result.history = rec.history();
  result.finalRev = finalRev;
  result.violations.push(...report.violations);
  if (report.inconclusive.length > 0) result.notes.push(`L1 inconclusive: ${report.inconclusive.join('; ')}`);
  say(`checked: ${JSON.stringify(report.stats)}; ${report.violations.length} violations`);
  void workers;
}

/** Every member ends with the same key space at the final revision (serializable reads of each member's own store). */
async function convergence(cluster: Cluster, rev: number, say: (l: string) => void, result: RunResult): Promise<void> {
  const deadlineMs = Date.now() + 30_000;
  let last = '';
  while (Date.now() < deadlineMs) {
    try {
      const all = await Promise.all(cluster.alive().map(async (m) => {
        const r = await cluster.admin(m).kv.range({ key: Buffer.from([0]), range_end: Buffer.from([0]), revision: String(rev), serializable: true }, deadline(3000));
        return r.kvs.map((kv) => `${kv.key.toString()}=${kv.value.toString()}@${kv.mod_revision}/${kv.create_revision}/${kv.version}`).join('\n');
      }));
      last = all.map((a, i) => `${cluster.alive()[i]!.name}: ${a.split('\n').length} keys`).join(', ');
      if (new Set(all).size === 1 && all.length === cluster.members.length) {
        say(`converged at ${rev}: ${last}`);
        return;
      }
    } catch (e) {
      last = String(e);
    }
    await sleep(500);
  }
  result.violations.push(`convergence: members differ at revision ${rev} after 30 s: ${last}`);
}

function save(seed: number, log: string[], cluster: Cluster, result: RunResult, rec: Recorder | undefined): string {
  const dir = join(tmpdir(), `etcetera-chaos-${seed}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'run.log'), log.join('\n') + '\n');
  writeFileSync(join(dir, 'violations.txt'), result.violations.join('\n\n') + '\n');
  for (const m of cluster.members) if (m.proc) writeFileSync(join(dir, `member-${m.name}.log`), m.proc.output.join('\n') + '\n');
  if (rec) writeFileSync(join(dir, 'history.json'), JSON.stringify(rec.history()));
  return dir;
}
