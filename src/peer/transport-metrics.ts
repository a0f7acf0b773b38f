/**
 * Exports the transport's per-peer counters under etcd's metric names (etcd_network_*) where etcd measures
 * the same thing, and ours under etcetera_peer_*. Values are read from `transport.stats()` at scrape time.
 */
import type { Registry } from '../metrics/metrics.js';
import type { NodeId } from '../raft/types.js';
import type { PeerStats } from './types.js';

export interface TransportStatsSource {
  stats(): Map<NodeId, PeerStats>;
}

export function registerTransportMetrics(registry: Registry, transport: TransportStatsSource, selfId: NodeId): void {
  const to = ['To'];
  const from = ['From'];
  const sentBytes = registry.counter({ name: 'etcd_network_peer_sent_bytes_total', help: 'The total number of bytes sent to peers.', labelNames: to });
  const receivedBytes = registry.counter({ name: 'etcd_network_peer_received_bytes_total', help: 'The total number of bytes received from peers.', labelNames: from });
  const sentFailures = registry.counter({ name: 'etcd_network_peer_sent_failures_total', help: 'The total number of send failures from peers.', labelNames: to });
  const snapshotsSent = registry.counter({ name: 'etcd_network_snapshot_send_success', help: 'Total number of successful snapshot sends.', labelNames: to });
  const snapshotFailures = registry.counter({ name: 'etcd_network_snapshot_send_failures', help: 'Total number of snapshot send failures.', labelNames: to });
  const snapshotsReceived = registry.counter({ name: 'etcd_network_snapshot_receive_success', help: 'Total number of successful snapshot receives.', labelNames: from });
  const activePeers = registry.gauge({ name: 'etcd_network_active_peers', help: 'The current number of active peer connections.', labelNames: ['Local', 'Remote'] });
  const disconnected = registry.counter({ name: 'etcd_network_disconnected_peers_total', help: 'The total number of disconnected peers.', labelNames: ['Local', 'Remote'] });
  const messagesSent = registry.counter({ name: 'etcetera_peer_messages_sent_total', help: 'Raft messages sent to peers.', labelNames: to });
  const messagesReceived = registry.counter({ name: 'etcetera_peer_messages_received_total', help: 'Raft messages received from peers.', labelNames: from });
  const framesSent = registry.counter({ name: 'etcetera_peer_frames_sent_total', help: 'Batch frames sent to peers (messages per frame shows batching).', labelNames: to });
  const reconnects = registry.counter({ name: 'etcetera_peer_reconnects_total', help: 'Reconnection attempts to peers.', labelNames: to });
  const local = selfId.toString(16);
  registry.onCollect(() => {
    for (const [id, s] of transport.stats()) {
      const peer = id.toString(16);
      sentBytes.setTotal(s.bytesSent, { To: peer });
      receivedBytes.setTotal(s.bytesReceived, { From: peer });
      sentFailures.setTotal(s.sendFailures, { To: peer });
      snapshotsSent.setTotal(s.snapshotsSent, { To: peer });
      snapshotFailures.setTotal(s.snapshotFailures, { To: peer });
      snapshotsReceived.setTotal(s.snapshotsReceived, { From: peer });
      messagesSent.setTotal(s.messagesSent, { To: peer });
      messagesReceived.setTotal(s.messagesReceived, { From: peer });
      framesSent.setTotal(s.framesSent, { To: peer });
      reconnects.setTotal(s.reconnects, { To: peer });
      activePeers.set(s.connected ? 1 : 0, { Local: local, Remote: peer });
      disconnected.setTotal(s.disconnects, { Local: local, Remote: peer });
    }
  });
}
