/**
 * etcd's client traffic counters (etcd_network_client_grpc_received_bytes_total / _sent_bytes_total), which
 * etcd's Grafana dashboard plots as "client traffic in/out". Counted at the client port's sockets (gRPC and
 * the HTTP/1 gateway alike): bytes read and written by connections closed so far plus those still open, read
 * when metrics are collected, so a request costs nothing extra. etcd counts message bytes in its gRPC
 * interceptor; ours include the HTTP/2 framing, a few percent more.
 */
import type { Registry } from './metrics.js';

export interface TrafficBytes {
  received: number;
  sent: number;
}

export function registerClientTraffic(registry: Registry, read: () => TrafficBytes): void {
  const received = registry.counter({ name: 'etcd_network_client_grpc_received_bytes_total', help: 'The total number of bytes received from grpc clients.' });
  const sent = registry.counter({ name: 'etcd_network_client_grpc_sent_bytes_total', help: 'The total number of bytes sent to grpc clients.' });
  const reported: TrafficBytes = { received: 0, sent: 0 };
  registry.onCollect(() => {
    const now = read();
    // Monotonic by construction (closed connections' bytes are kept); a counter only ever moves up.
    received.inc(Math.max(0, now.received - reported.received));
    sent.inc(Math.max(0, now.sent - reported.sent));
    reported.received = Math.max(reported.received, now.received);
    reported.sent = Math.max(reported.sent, now.sent);
  });
}
