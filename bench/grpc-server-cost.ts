/**
 * Server CPU per gRPC call of our two gRPC servers (issue 34), with no storage under them:
 * `npx tsx bench/grpc-server-cost.ts [--puts 20000] [--clients 16] [--reps 2] [--floor]`.
 *
 * The server is startGrpcServer as a member configures it (our socket accept, HTTP/1 sniffing, the authority
 * hand-over, etcd's grpc_server_* metrics, the real KV service and its Put handler) over an EtcdApi whose put
 * answers at once: what is left is the gRPC server's own cost plus the Put handler's. It runs in a child
 * process (`--serve grpc-js|h2`); the load comes from this process: one grpc-js channel, `clients` Puts in
 * flight (closed loop, 16 as kube-apiserver's one connection multiplexes), 2,000 warm-up Puts first. Server
 * CPU is utime + stime of /proc/PID/stat across the measured Puts; servers alternate A B A B so drift from
 * other work on the machine shows as spread between runs of one server.
 *
 * Expectation (issue 34): a storage-free grpc-js Put server took ~110–130 µs per put on the Xeon, close to
 * etcd's whole cost; a server without grpc-js' per-call layers should take well under that.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
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

/** Our two servers, and node:http2 alone answering every call with fixed bytes (`--floor`). */
type Kind = GrpcServerKind | 'h2-floor';

/** The EtcdApi surface the Put path touches; every put is revision 2. */
function trivialApi(): EtcdApi {
  const header = { clusterId: 0x1234n, memberId: 0x5678n, revision: 2, raftTerm: 2 };
  return {
    header: (revision?: number) => ({ ...header, revision: revision ?? header.revision }),
    hasLeader: () => true,
    isLearner: () => false,
    put: async () => ({ revision: 2 }),
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

async function serve(kind: Kind): Promise<void> {
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

function startServer(kind: Kind): Promise<{ child: ChildProcess; port: number }> {
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

async function load(client: grpc.Client & Record<string, Function>, puts: number, clients: number): Promise<void> {
  let next = 0;
  const req = { key: Buffer.from('bench-key'), value: Buffer.alloc(256, 1) };
  const worker = async (): Promise<void> => {
    while (next < puts) {
      next++;
      await new Promise<void>((resolve, reject) => {
        client.Put!(req, (err: grpc.ServiceError | null) => (err ? reject(err) : resolve()));
      });
    }
  };
  await Promise.all(Array.from({ length: clients }, worker));
}

async function measure(kind: Kind, puts: number, clients: number): Promise<{ cpuUsPerPut: number; putsPerSecond: number }> {
  const { child, port } = await startServer(kind);
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition('etcdserverpb.KV'), 'KV');
  const client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
  try {
    await load(client, 2000, clients);
    const cpu0 = cpuMs(child.pid!);
    const t0 = performance.now();
    await load(client, puts, clients);
    const wallMs = performance.now() - t0;
    const cpu = cpuMs(child.pid!) - cpu0;
    return { cpuUsPerPut: (cpu * 1000) / puts, putsPerSecond: (puts * 1000) / wallMs };
  } finally {
    client.close();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

async function main(): Promise<void> {
  const serveAt = args.indexOf('--serve');
  if (serveAt >= 0) return serve(args[serveAt + 1] as Kind);
  const puts = arg('puts', 20_000);
  const clients = arg('clients', 16);
  const reps = arg('reps', 2);
  console.log(`${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} CPUs, node ${process.version}; ${puts} puts, ${clients} in flight`);
  const kinds: Kind[] = args.includes('--floor') ? ['grpc-js', 'h2', 'h2-floor'] : ['grpc-js', 'h2'];
  const results: Record<string, Array<{ cpuUsPerPut: number; putsPerSecond: number }>> = {};
  for (const kind of kinds) results[kind] = [];
  for (let rep = 0; rep < reps; rep++) {
    for (const kind of kinds) {
      const r = await measure(kind, puts, clients);
      results[kind]!.push(r);
      console.log(`${kind.padEnd(9)} run ${rep + 1}: ${r.cpuUsPerPut.toFixed(1)} µs server CPU per put, ${r.putsPerSecond.toFixed(0)} puts/s`);
    }
  }
  for (const [kind, rs] of Object.entries(results)) {
    const mean = rs.reduce((s, r) => s + r.cpuUsPerPut, 0) / rs.length;
    console.log(`${kind.padEnd(9)} mean ${mean.toFixed(1)} µs per put (runs ${rs.map((r) => r.cpuUsPerPut.toFixed(1)).join(', ')})`);
  }
}

await main();
