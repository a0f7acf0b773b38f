/**
 * A witness's client URLs (issue 32, item 4): one port, two protocols, as a data member's (client-port.ts):
 * HTTP/1.1 for /health, /livez, /readyz, /metrics and /status, gRPC for the few calls witness-grpc.ts answers
 * (what `etcdctl endpoint health` and `endpoint status` send). The gRPC server is the repo's own, on our own
 * HTTP/2 frames (src/api/h2frames/) or on node:http2 (src/api/h2grpc/) as ETCETERA_GRPC_SERVER picks for a
 * data member (grpc-js' choice takes node:http2), never grpc-js: a witness stays small
 * (test/e2e/witness-bundle.test.ts).
 * Plain http:// only: a witness takes no client certificate (startMetricsHttp refused https here before too).
 */
import * as http from 'node:http';
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import { FramesGrpcServer } from '../api/h2frames/frames-grpc-server.js';
import { grpcServerKind } from '../api/grpc/grpc-transport.js';
import { routeConnection } from '../api/grpc/client-port.js';
import { handOver } from '../api/http2/authority-fix.js';
import { witnessGrpcRequestBytesMax } from '../base/limits.js';
import type { Logger } from '../config/log.js';
import { listenAt, type MetricsRequestHandler } from '../metrics/metrics-http.js';
import { witnessKvDefinition, witnessKvService, witnessMaintenanceDefinition, witnessMaintenanceService, type WitnessGrpcSource } from './witness-grpc.js';

/** How long a new connection may stay silent before it is dropped (a data member's client port's figure). */
const firstBytesMs = 10_000;
/** How long open gRPC calls may finish when the witness stops (they are all immediate answers). */
const closeGraceMs = 1_000;

export interface WitnessClientPort {
  /** The bound URLs, with the actual ports. */
  urls: string[];
  close(): Promise<void>;
}

export async function startWitnessClientPort(o: { listenUrls: string[]; http: MetricsRequestHandler; grpc: WitnessGrpcSource; logger: Logger }): Promise<WitnessClientPort> {
  const ownFrames = grpcServerKind(undefined, process.env) === 'frames';
  // node:http2 is loaded only when asked for.
  const grpc = ownFrames
    ? new FramesGrpcServer({ messageBytesMax: witnessGrpcRequestBytesMax })
    : new (await import('../api/h2grpc/h2-grpc-server.js')).H2GrpcServer({ messageBytesMax: witnessGrpcRequestBytesMax });
  grpc.addService(witnessKvDefinition, witnessKvService(o.grpc));
  grpc.addService(witnessMaintenanceDefinition, witnessMaintenanceService(o.grpc));
  const httpServer = http.createServer((req, res) => {
    if (!o.http(req, res)) res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
  });
  const accepted = new Set<net.Socket>();
  const accept = (socket: net.Socket): void => {
    accepted.add(socket);
    socket.once('close', () => accepted.delete(socket));
    // handOver repairs etcdctl 3.4's schemed :authority, which node:http2 refuses (our own frames read it as it is).
    const toGrpc = ownFrames ? (s: net.Socket) => grpc.inject(s) : (s: net.Socket) => handOver(s, (connection: Duplex) => grpc.inject(connection));
    routeConnection(socket, toGrpc, (s) => void httpServer.emit('connection', s), firstBytesMs);
  };
  const listeners: net.Server[] = [];
  const urls: string[] = [];
  const close = async (): Promise<void> => {
    for (const l of listeners) l.close();
    httpServer.closeAllConnections();
    await grpc.close(closeGraceMs);
    for (const socket of accepted) socket.destroy();
  };
  try {
    for (const raw of o.listenUrls) {
      const url = new URL(raw);
      if (url.protocol !== 'http:') throw new TypeError(`a witness's client URL ${raw} must be http:// (it takes no certificate)`);
      const server = net.createServer(accept);
      listeners.push(server);
      const bound = await listenAt(server, url, o.logger, 'client listener');
      urls.push(bound);
      o.logger.info('serving health, metrics, status and the witness\'s gRPC calls', { url: bound });
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { urls, close };
}
