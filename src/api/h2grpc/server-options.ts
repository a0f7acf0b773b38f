/**
 * The options of our gRPC servers (h2-grpc-server.ts on node:http2, src/api/h2frames on our own frames): the
 * same set, with etcd's flags behind them, checked the same way (an unknown option is a caller's bug).
 */
import type { Scheduler } from '../../base/scheduler.js';

export interface GrpcServerOptions {
  /** Largest request message accepted (grpc.max_receive_message_length); larger: RESOURCE_EXHAUSTED. */
  messageBytesMax: number;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; 2^32-1 (etcd's default) leaves HTTP/2's unlimited. */
  concurrentStreamsMax?: number;
  /** Server ping interval, 0: none (etcd --grpc-keepalive-interval). */
  keepAliveIntervalMs?: number;
  /** How long a ping may go unanswered (etcd --grpc-keepalive-timeout). */
  keepAliveTimeoutMs?: number;
  /** The client ping floor (etcd --grpc-keepalive-min-time, ping-policy.ts); 0 or absent: not enforced. */
  keepAliveMinTimeMs?: number;
  /** Time and the one deadline timer (tests pass a manual one); Node's by default. */
  scheduler?: Scheduler;
}

const optionKeys = new Set(['messageBytesMax', 'concurrentStreamsMax', 'keepAliveIntervalMs', 'keepAliveTimeoutMs', 'keepAliveMinTimeMs', 'scheduler']);

/** Throws a TypeError naming `server` for an unknown option or a message limit that is not positive. */
export function checkServerOptions(server: string, options: GrpcServerOptions): void {
  for (const key of Object.keys(options)) {
    if (!optionKeys.has(key)) throw new TypeError(`${server}: unknown option ${key}`);
  }
  if (!(options.messageBytesMax > 0)) throw new TypeError(`${server}: messageBytesMax must be positive`);
}
