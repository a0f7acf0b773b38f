/**
 * The gRPC server behind our client ports, one of three (issue 34): our own minimal one on our own HTTP/2
 * frames (src/api/h2frames/, 'frames', the default), the same on node:http2 (src/api/h2grpc/, 'h2'), or grpc-js'
 * Server. All take the same service implementations and the connections server.ts accepted; `--grpc-server` (MemberOptions.grpcServer) picks one, and the environment
 * variable ETCETERA_GRPC_SERVER picks it where no option says (so a whole test suite runs on either).
 */
import type * as grpc from '@grpc/grpc-js';
import type { Duplex } from 'node:stream';
import type { GrpcServerOptions } from '../h2grpc/server-options.js';
import { FramesGrpcServer } from '../h2frames/frames-grpc-server.js';
import type { GrpcLimits } from '../../config/member-options.js';

export const grpcServerKinds = ['grpc-js', 'h2', 'frames'] as const;
export type GrpcServerKind = (typeof grpcServerKinds)[number];

export interface GrpcTransport {
  addService(definition: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation): void;
  /** Serves a connection whose first bytes are the HTTP/2 client preface. */
  inject(connection: Duplex): void;
  /** Graceful stop; past `graceMs` open calls are cut. Resolves true when it had to cut. */
  shutdown(graceMs: number): Promise<boolean>;
}

/** The option if given, else ETCETERA_GRPC_SERVER (empty: unset), else frames (the default since issue 34). */
export function grpcServerKind(option: GrpcServerKind | undefined, env: NodeJS.ProcessEnv): GrpcServerKind {
  const kind = option ?? (env.ETCETERA_GRPC_SERVER || 'frames');
  if (!(grpcServerKinds as readonly string[]).includes(kind)) {
    throw new TypeError(`unknown gRPC server "${kind}" (expected ${grpcServerKinds.join(' or ')})`);
  }
  return kind as GrpcServerKind;
}

export interface TransportLimits {
  messageBytesMax: number;
  limits: GrpcLimits | undefined;
}

/** grpc-js is imported here on demand only: a member on h2 or frames never loads it (issue 34: ~5 MB of RssAnon). */
export async function createGrpcTransport(kind: GrpcServerKind, l: TransportLimits): Promise<GrpcTransport> {
  if (kind === 'h2') {
    // node:http2 is loaded only here: a member on our own frames never loads it.
    const { H2GrpcServer } = await import('../h2grpc/h2-grpc-server.js');
    return ownTransport(new H2GrpcServer(ownOptions(l)));
  }
  if (kind === 'frames') return ownTransport(new FramesGrpcServer(ownOptions(l)));
  // A CommonJS package: the bundle's import() gives its exports as `default` (tsc's Node ESM gives both).
  const loaded = (await import('@grpc/grpc-js')) as typeof grpc & { default?: typeof grpc };
  return grpcJsTransport(loaded.default ?? loaded, l);
}

function ownOptions({ messageBytesMax, limits }: TransportLimits): GrpcServerOptions {
  return {
    messageBytesMax,
    ...(limits !== undefined
      ? {
          concurrentStreamsMax: limits.concurrentStreamsMax,
          keepAliveIntervalMs: limits.keepAliveIntervalMs,
          keepAliveTimeoutMs: limits.keepAliveTimeoutMs,
          keepAliveMinTimeMs: limits.keepAliveMinTimeMs,
        }
      : {}),
  };
}

/** What our two servers have in common. */
interface OwnServer {
  addService(definition: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation): void;
  inject(connection: Duplex): void;
  close(graceMs: number): Promise<boolean>;
}

function ownTransport(server: OwnServer): GrpcTransport {
  return {
    addService: (definition, implementation) => server.addService(definition, implementation),
    inject: (connection) => server.inject(connection),
    shutdown: (graceMs) => server.close(graceMs),
  };
}

/**
 * etcd's keepalive server parameters: server pings every interval (0: never), waits timeout for the answer.
 * The client ping floor (--grpc-keepalive-min-time) has no grpc-js server setting: only the h2 server enforces it.
 */
function keepAliveOptions(l: GrpcLimits): grpc.ServerOptions {
  return {
    ...(l.keepAliveIntervalMs > 0 ? { 'grpc.keepalive_time_ms': l.keepAliveIntervalMs } : {}),
    ...(l.keepAliveTimeoutMs > 0 ? { 'grpc.keepalive_timeout_ms': l.keepAliveTimeoutMs } : {}),
    // etcd's default is unlimited (math.MaxUint32), which is also HTTP/2's; set only a real limit.
    ...(l.concurrentStreamsMax < 2 ** 32 - 1 ? { 'grpc.max_concurrent_streams': l.concurrentStreamsMax } : {}),
  };
}

function grpcJsTransport(grpcJs: typeof grpc, { messageBytesMax, limits }: TransportLimits): GrpcTransport {
  const server = new grpcJs.Server({
    'grpc.max_receive_message_length': messageBytesMax,
    ...(limits !== undefined ? keepAliveOptions(limits) : {}),
    'grpc.max_send_message_length': -1,
    // channelz keeps per-call statistics on every call; we expose our own metrics instead.
    'grpc.enable_channelz': 0,
  });
  const injector = server.createConnectionInjector(grpcJs.ServerCredentials.createInsecure());
  return {
    addService: (definition, implementation) => server.addService(definition, implementation),
    inject: (connection) => injector.injectConnection(connection),
    shutdown: (graceMs) =>
      new Promise<boolean>((resolve) => {
        // Open streams (watches, keep-alives) never end on their own, and grpc-js's graceful shutdown waits
        // for them (nor does its forceShutdown reach injected connections): past the grace period every
        // connection is cut, and clients see UNAVAILABLE, which they retry on another member (issue 26).
        const force = setTimeout(() => {
          server.forceShutdown();
          injector.destroy();
          resolve(true);
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve(false);
        });
      }),
  };
}
