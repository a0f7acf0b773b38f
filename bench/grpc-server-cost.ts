/**
 * Server CPU per gRPC call of our two gRPC servers (issue 34), with no storage under them:
 * `npx tsx bench/grpc-server-cost.ts [--puts 20000] [--clients 1,16] [--reps 2] [--servers grpc-js,h2]
 * [--floor] [--range] [--etcd]`.
 *
 * The server is startGrpcServer as a member configures it (our socket accept, HTTP/1 sniffing, the authority
 * hand-over, etcd's grpc_server_* metrics, the real KV service and its Put handler) over an EtcdApi whose put
 * answers at once: what is left is the gRPC server's own cost plus the Put handler's. It runs in a child
 * process (`--serve grpc-js|h2`); the load comes from this process: one grpc-js channel, `clients` Puts in
 * flight (closed loop, 16 as kube-apiserver's one connection multiplexes), 2,000 warm-up Puts first. Server
 * CPU is utime + stime of /proc/PID/stat across the measured Puts; servers alternate A B A B so drift from
 * other work on the machine shows as spread between runs of one server. The client's p50 per call is measured too.
 *
 * `--range` sends a serializable Range of an absent key instead of a Put (the server answers it from an empty
 * result); `--etcd` adds a real etcd (/usr/bin/etcd, or $ETCD_BIN, in a fresh data directory) to the servers
 * compared, which is storage-free only for that Range (etcd's Put would fsync), so pass both.
 *
 * Expectation (issue 34): a storage-free grpc-js Put server took ~110–130 µs per put on the Xeon, close to
 * etcd's whole cost; a server without grpc-js' per-call layers should take well under that.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { serviceDefinition } from '../src/api/grpc/proto.js';
import { startGrpcServer } from '../src/api/grpc/server.js';
import type { GrpcServerKind } from '../src/api/grpc/grpc-transport.js';
import { registerGrpcMetrics } from '../src/metrics/grpc-metrics.js';
import { Registry } from '../src/metrics/metrics.js';
import type { EtcdApi } from '../src/node/server-api.js';

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};

/** Our two servers, node:http2 alone answering every call with fixed bytes (`--floor`), and etcd (`--etcd`). */
type Kind = GrpcServerKind | 'h2-floor' | 'etcd';

/** The EtcdApi surface the Put path touches; every put is revision 2. */
function trivialApi(): EtcdApi {
  const header = { clusterId: 0x1234n, memberId: 0x5678n, revision: 2, raftTerm: 2 };
  return {
    header: (revision?: number) => ({ ...header, revision: revision ?? header.revision }),
    hasLeader: () => true,
    isLearner: () => false,
    put: async () => ({ revision: 2 }),
    range: async () => ({ kvs: [], count: 0, more: false, revision: 2 }),
  } as unknown as EtcdApi;
}

/**
 * The floor under any gRPC server on node:http2: every stream is answered with one fixed PutResponse and
 * OK trailers, its request neither parsed nor decoded (no gRPC framing, no handler, no metrics).
 */
function serveFloor(): void {
  const body = Buffer.from([0, 0, 0, 0, 0]);
  const server = http2.createServer();
  server.on('stream', (stream) => {
    stream.on('error', () => {});
    stream.resume();
    stream.once('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(body);
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`port ${(server.address() as AddressInfo).port}\n`));
  process.on('SIGTERM', () => process.exit(0));
}

async function serve(kind: GrpcServerKind | 'h2-floor'): Promise<void> {
  if (kind === 'h2-floor') return serveFloor();
  const server = await startGrpcServer({
    api: trivialApi(),
    listenUrls: ['http://127.0.0.1:0'],
    grpcServer: kind,
    metrics: registerGrpcMetrics(new Registry()),
  });
  process.stdout.write(`port ${server.ports[0]}\n`);
  process.on('SIGTERM', () => void server.close(100).then(() => process.exit(0)));
}

function cpuMs(pid: number): number {
  // Fields after the command name (which may hold spaces): utime is the 12th, stime the 13th, in clock ticks.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** A one-member etcd in a fresh data directory; ready once its client port answers a Range. */
async function startEtcd(): Promise<{ child: ChildProcess; port: number; cleanup: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'grpc-cost-etcd-'));
  const [port, peerPort] = [await freePort(), await freePort()];
  const child = spawn(process.env.ETCD_BIN ?? '/usr/bin/etcd', [
    '--data-dir', dir, '--name', 'm1',
    '--listen-client-urls', `http://127.0.0.1:${port}`, '--advertise-client-urls', `http://127.0.0.1:${port}`,
    '--listen-peer-urls', `http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
    '--initial-cluster', `m1=http://127.0.0.1:${peerPort}`, '--log-level', 'error', '--logger', 'zap',
  ], { stdio: ['ignore', 'ignore', 'inherit'] });
  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  const client = kvClient(port);
  try {
    const until = Date.now() + 20_000;
    for (;;) {
      const ok = await new Promise<boolean>((resolve) => client.Range!(rangeRequest, { deadline: Date.now() + 1000 }, (err: unknown) => resolve(!err)));
      if (ok) break;
      if (Date.now() > until || child.exitCode !== null) throw new Error('etcd did not start in 20 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    child.kill('SIGKILL');
    cleanup();
    throw err;
  } finally {
    client.close();
  }
  return { child, port, cleanup };
}

function kvClient(port: number): grpc.Client & Record<string, Function> {
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition('etcdserverpb.KV'), 'KV');
  return new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
}

/** A serializable Range of a key no one wrote: etcd answers it from memory, without Raft or the disk. */
const rangeRequest = { key: Buffer.from('absent-key'), serializable: true };
const putRequest = { key: Buffer.from('bench-key'), value: Buffer.alloc(256, 1) };

function startServer(kind: Kind): Promise<{ child: ChildProcess; port: number; cleanup?: () => void }> {
  if (kind === 'etcd') return startEtcd();
  const child = spawn(process.execPath, [...process.execArgv, new URL(import.meta.url).pathname, '--serve', kind], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server did not start in 20 s')), 20_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      const m = /port (\d+)/.exec(chunk.toString());
      if (m === null) return;
      clearTimeout(timer);
      resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/** `calls` calls, `clients` in flight; each call's client-observed latency in ms. */
async function load(client: grpc.Client & Record<string, Function>, calls: number, clients: number, range: boolean): Promise<Float64Array> {
  let next = 0;
  const latencies = new Float64Array(calls);
  const worker = async (): Promise<void> => {
    while (next < calls) {
      const i = next++;
      const t0 = performance.now();
      await new Promise<void>((resolve, reject) => {
        const done = (err: grpc.ServiceError | null): void => (err ? reject(err) : resolve());
        if (range) client.Range!(rangeRequest, done);
        else client.Put!(putRequest, done);
      });
      latencies[i] = performance.now() - t0;
    }
  };
  await Promise.all(Array.from({ length: clients }, worker));
  return latencies;
}

interface Result {
  cpuUsPerCall: number;
  callsPerSecond: number;
  p50Ms: number;
}

async function measure(kind: Kind, calls: number, clients: number, range: boolean): Promise<Result> {
  const { child, port, cleanup } = await startServer(kind);
  const client = kvClient(port);
  try {
    await load(client, 2000, clients, range);
    const cpu0 = cpuMs(child.pid!);
    const t0 = performance.now();
    const latencies = await load(client, calls, clients, range);
    const wallMs = performance.now() - t0;
    const cpu = cpuMs(child.pid!) - cpu0;
    latencies.sort();
    return { cpuUsPerCall: (cpu * 1000) / calls, callsPerSecond: (calls * 1000) / wallMs, p50Ms: latencies[Math.floor(calls / 2)]! };
  } finally {
    client.close();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    cleanup?.();
  }
}

async function main(): Promise<void> {
  const serveAt = args.indexOf('--serve');
  if (serveAt >= 0) return serve(args[serveAt + 1] as GrpcServerKind | 'h2-floor');
  const calls = arg('puts', 20_000);
  const clientsAt = args.indexOf('--clients');
  const clientCounts = clientsAt >= 0 ? args[clientsAt + 1]!.split(',').map(Number) : [16];
  const reps = arg('reps', 2);
  const range = args.includes('--range');
  const what = range ? 'serializable Ranges of an absent key' : 'Puts';
  console.log(`${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} CPUs, node ${process.version}; ${calls} ${what} per run`);
  const serversAt = args.indexOf('--servers');
  const kinds = (serversAt >= 0 ? args[serversAt + 1]!.split(',') : ['grpc-js', 'h2']) as Kind[];
  if (args.includes('--floor')) kinds.push('h2-floor');
  if (args.includes('--etcd')) kinds.push('etcd');
  for (const clients of clientCounts) {
    const results = new Map<Kind, Result[]>(kinds.map((k) => [k, []]));
    for (let rep = 0; rep < reps; rep++) {
      for (const kind of kinds) {
        const r = await measure(kind, calls, clients, range);
        results.get(kind)!.push(r);
        console.log(`${clients} in flight, ${kind.padEnd(9)} run ${rep + 1}: ${r.cpuUsPerCall.toFixed(1)} µs server CPU per call, p50 ${r.p50Ms.toFixed(3)} ms, ${r.callsPerSecond.toFixed(0)} calls/s`);
      }
    }
    for (const [kind, rs] of results) {
      const mean = (f: (r: Result) => number): number => rs.reduce((s, r) => s + f(r), 0) / rs.length;
      console.log(`${clients} in flight, ${kind.padEnd(9)} mean ${mean((r) => r.cpuUsPerCall).toFixed(1)} µs per call, p50 ${mean((r) => r.p50Ms).toFixed(3)} ms (runs ${rs.map((r) => r.cpuUsPerCall.toFixed(1)).join(', ')})`);
    }
  }
}

await main();
