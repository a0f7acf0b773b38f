/**
 * startGrpcServer: the etcd v3 gRPC API over one grpc-js server, listening on every client URL. http:// URLs
 * are plaintext, https:// use TLS with etcd's flags' semantics (--cert-file, --key-file, --trusted-ca-file,
 * --client-cert-auth). Message limits are etcd's: a request may be requestBytesMax plus gRPC overhead on the
 * wire (larger is refused by grpc-js); between the two, the services answer "etcdserver: request is too large".
 * The same ports speak HTTP/1.1 (client-port.ts): the JSON gateway under /v3/ on the same service
 * implementations, and whatever `http` serves (/health, /version, /metrics).
 */
import type * as grpc from '@grpc/grpc-js';
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import * as http from 'node:http';
import { readFile } from 'node:fs/promises';
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { Duplex } from 'node:stream';
import type { TlsFiles } from '../../config/tls-files.js';
import { handOver } from '../http2/authority-fix.js';
import { routeConnection } from './client-port.js';
import { lazyGateway } from '../gateway/lazy-gateway.js';
import { answerClientError } from '../gateway/client-errors.js';
import { grpcMessageBytesMax, grpcOverheadBytes } from '../../base/limits.js';
import type { EtcdApi } from '../../node/server-api.js';
import type { Logger } from '../../config/log.js';
import { logListenerErrors } from '../../config/listener-errors.js';
import type { GrpcLimits, TlsPolicy } from '../../config/member-options.js';
import { type GrpcMetrics, instrumentGrpcServer } from '../../metrics/grpc-metrics.js';
import { createGrpcTransport, grpcServerKind, type GrpcServerKind } from './grpc-transport.js';
import { acceptVerifiedClient, logRejectedHandshake, tlsPolicyOptions } from '../../tls/tls-policy.js';
import { readRevokedSerials } from '../../tls/crl.js';
import { authService } from './auth-service.js';
import { clusterService } from './cluster-service.js';
import { electionService } from './election-service.js';
import { kvService } from './kv-service.js';
import { leaderStreams } from './leader-streams.js';
import { leaseService } from './lease-service.js';
import { lockService } from './lock-service.js';
import { maintenanceService } from './maintenance-service.js';
import { serviceDefinition } from './proto.js';
import { unimplementedService, unimplementedServiceNames } from './unimplemented-services.js';
import { watchService } from './watch-service.js';

/** Client-port TLS (etcd --cert-file, --key-file, --trusted-ca-file, --client-cert-auth, ...). */
export type GrpcTlsOptions = TlsFiles;

export interface GrpcServerOptions {
  api: EtcdApi;
  /** e.g. ["http://127.0.0.1:2379", "https://0.0.0.0:2379"]; port 0 picks a free port. */
  listenUrls: string[];
  tls?: GrpcTlsOptions;
  /** How often require-leader streams are checked (etcd: one election timeout). */
  leaderCheckIntervalMs?: number;
  /** Runs the leader check (default: a timer of its own; a member's rides its Raft tick, EtcdServer.every). */
  every?: (ms: number, fn: () => void) => { cancel(): void };
  /** etcd's --max-request-bytes, --max-txn-ops, --max-concurrent-streams, --grpc-keepalive-*; default etcd's. */
  limits?: GrpcLimits;
  tlsPolicy?: TlsPolicy;
  /** Logs refused TLS handshakes (etcd's "rejected connection"). */
  logger?: Logger;
  /** etcd's grpc_server_* metrics, counted per call. */
  metrics?: GrpcMetrics;
  /** HTTP/1.1 routes besides the gateway; returns false for paths it does not serve (then 404). */
  http?: (req: http.IncomingMessage, res: http.ServerResponse) => boolean;
  /** Further services of our own on the same port (the join service, join-service.ts). */
  services?: Array<{ definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation }>;
  /** Which gRPC server serves the port (grpc-transport.ts); default ETCETERA_GRPC_SERVER, else frames. */
  grpcServer?: GrpcServerKind;
}

export interface GrpcServerHandle {
  /** Bound port per listen URL, in order. */
  ports: number[];
  /** Stops accepting, cancels open calls after `graceMs`, and resolves when the server is down. */
  close(graceMs?: number): Promise<void>;
  /** Bytes read from and written to client connections since the start (closed and open ones). */
  trafficBytes(): { received: number; sent: number };
}

const optionKeys = new Set(['api', 'listenUrls', 'tls', 'leaderCheckIntervalMs', 'every', 'limits', 'tlsPolicy', 'logger', 'metrics', 'http', 'services', 'grpcServer']);
/** A connection that has not sent its first bytes by then speaks neither HTTP/2 nor HTTP/1.1 to us. */
const firstBytesMs = 10_000;

function checkOptions(options: GrpcServerOptions): void {
  for (const key of Object.keys(options)) {
    if (!optionKeys.has(key)) throw new TypeError(`startGrpcServer: unknown option ${key}`);
  }
  if (options.listenUrls.length === 0) throw new TypeError('startGrpcServer: listenUrls is empty');
  const tls = options.tls;
  if (tls?.clientCertAuth && !tls.trustedCaFile) {
    throw new TypeError('startGrpcServer: clientCertAuth needs trustedCaFile');
  }
}

async function tlsContext(tlsOptions: GrpcTlsOptions, policy: TlsPolicy | undefined): Promise<tls.TlsOptions> {
  const [cert, key, ca] = await Promise.all([
    readFile(tlsOptions.certFile),
    readFile(tlsOptions.keyFile),
    tlsOptions.trustedCaFile ? readFile(tlsOptions.trustedCaFile) : Promise.resolve(undefined),
  ]);
  const clientCertAuth = tlsOptions.clientCertAuth === true;
  // A CRL is applied after each handshake (acceptVerifiedClient, as etcd does); a bad file stops the start here.
  if (tlsOptions.crlFile !== undefined) readRevokedSerials(tlsOptions.crlFile);
  return {
    cert,
    key,
    ...(ca ? { ca } : {}),
    requestCert: clientCertAuth,
    // Verified after the handshake (acceptVerifiedClient), so a refusal is logged with its reason.
    rejectUnauthorized: false,
    ALPNProtocols: ['h2', 'http/1.1'],
    ...tlsPolicyOptions(policy),
  };
}

/**
 * We accept connections ourselves (plain TCP, or TLS terminated here) and inject them into grpc-js, so
 * authority-fix.ts can look at each connection first. grpc-js then sees cleartext HTTP/2 only.
 */
async function listen(
  url: URL,
  options: GrpcServerOptions,
  accept: (socket: net.Socket) => void,
): Promise<net.Server> {
  const tlsOptions = options.tls;
  let server: net.Server;
  if (url.protocol === 'http:') server = net.createServer(accept);
  else if (url.protocol === 'https:') {
    if (!tlsOptions) throw new TypeError(`startGrpcServer: ${url.href} needs tls options`);
    server = tls.createServer(await tlsContext(tlsOptions, options.tlsPolicy));
    const logger = options.logger;
    const verify = tlsOptions.clientCertAuth === true;
    server.on('secureConnection', (socket: tls.TLSSocket) => {
      if (!verify || acceptVerifiedClient(socket, logger, tlsOptions)) accept(socket);
    });
    // A failed handshake only concerns that client; it is logged, as etcd does.
    server.on('tlsClientError', (error: Error, socket: tls.TLSSocket) => {
      if (logger !== undefined) logRejectedHandshake(logger, error, socket);
    });
  } else throw new TypeError(`startGrpcServer: unsupported scheme in ${url.href}`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(url.port || '2379'), host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  logListenerErrors(server, options.logger, `client listener ${url.host}`);
  return server;
}

export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServerHandle> {
  checkOptions(options);
  const { api } = options;
  const limits = options.limits;
  const kind = grpcServerKind(options.grpcServer, process.env);
  const server = await createGrpcTransport(kind, {
    messageBytesMax: limits === undefined ? grpcMessageBytesMax : limits.requestBytesMax + grpcOverheadBytes,
    limits,
  });
  if (options.metrics !== undefined) instrumentGrpcServer(server, options.metrics);
  const streams = leaderStreams();
  const services = new Map<string, UntypedServiceImplementation>([
    ['etcdserverpb.KV', kvService(api)],
    ['etcdserverpb.Watch', watchService(api, streams)],
    ['etcdserverpb.Lease', leaseService(api, streams)],
    ['etcdserverpb.Cluster', clusterService(api)],
    ['etcdserverpb.Maintenance', maintenanceService(api)],
    ['v3lockpb.Lock', lockService(api)],
    ['v3electionpb.Election', electionService(api)],
    ...unimplementedServiceNames.map((name) => [name, unimplementedService(name)] as const),
  ]);
  // The Auth service of a core that has one (EtcdApi.authApi) replaces the unimplemented placeholder.
  if (api.authApi !== undefined) services.set('etcdserverpb.Auth', authService(api, api.authApi));
  for (const [name, impl] of services) server.addService(serviceDefinition(name), impl);
  for (const s of options.services ?? []) server.addService(s.definition, s.implementation);

  const gateway = lazyGateway(services, options.logger);
  const httpServer = http.createServer((req, res) => {
    if (gateway(req, res) || options.http?.(req, res) === true) return;
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
  });
  // A body Node's parser cannot read ends its connection, with etcd's answer where etcd gives one.
  httpServer.on('clientError', answerClientError);
  const sniffing = new Set<net.Socket>();
  // Our own frames read etcdctl 3.4's schemed :authority as it is; nghttp2 (h2, grpc-js) needs it repaired.
  const ownFrames = kind === 'frames';
  const toGrpc = (socket: net.Socket): void => {
    if (ownFrames) {
      sniffing.delete(socket);
      return server.inject(socket);
    }
    handOver(socket, (connection: Duplex) => {
      sniffing.delete(socket);
      server.inject(connection);
    });
  };
  const toHttp1 = (socket: net.Socket): void => {
    sniffing.delete(socket);
    httpServer.emit('connection', socket);
  };
  // Every client connection, whatever it turned out to speak: a stop past its grace period cuts them all.
  const accepted = new Set<net.Socket>();
  // Bytes of the connections already closed (etcd_network_client_grpc_*_bytes_total adds the open ones).
  const closedTraffic = { received: 0, sent: 0 };
  const accept = (socket: net.Socket): void => {
    sniffing.add(socket);
    accepted.add(socket);
    socket.once('close', () => {
      sniffing.delete(socket);
      accepted.delete(socket);
      closedTraffic.received += socket.bytesRead;
      closedTraffic.sent += socket.bytesWritten;
    });
    routeConnection(socket, toGrpc, toHttp1, firstBytesMs);
  };
  const listeners: net.Server[] = [];
  try {
    for (const raw of options.listenUrls) listeners.push(await listen(new URL(raw), options, accept));
  } catch (err) {
    for (const l of listeners) l.close();
    void server.shutdown(0);
    throw err;
  }
  const ports = listeners.map((l) => (l.address() as net.AddressInfo).port);
  const leaderCheck = (): void => void streams.check(api.hasLeader());
  const leaderCheckMs = options.leaderCheckIntervalMs ?? 1000;
  const timer = options.every?.(leaderCheckMs, leaderCheck) ?? unrefInterval(leaderCheckMs, leaderCheck);

  return {
    ports,
    trafficBytes: () => {
      let { received, sent } = closedTraffic;
      for (const socket of accepted) {
        received += socket.bytesRead;
        sent += socket.bytesWritten;
      }
      return { received, sent };
    },
    close: async (graceMs = 1000) => {
      timer.cancel();
      for (const l of listeners) l.close();
      for (const socket of sniffing) socket.destroy();
      httpServer.closeAllConnections();
      // Past the grace period every connection is cut (a watch never ends on its own), and clients see
      // UNAVAILABLE, which they retry on another member (issue 26).
      if (await server.shutdown(graceMs)) for (const socket of accepted) socket.destroy();
    },
  };
}

function unrefInterval(ms: number, fn: () => void): { cancel(): void } {
  const t = setInterval(fn, ms);
  t.unref();
  return { cancel: () => clearInterval(t) };
}
