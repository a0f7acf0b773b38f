/**
 * The one snapshot bridge between a data member's Raft driver and its network (production and simulator
 * alike, through member-factory.ts). The Raft core keeps only its latest snapshot's metadata (a member's own
 * snapshots are markers; the backend is the data). When a MsgSnap leaves, the backend is streamed to the
 * follower from a consistent view, with metadata for the index that view holds (etcd's merged snapshot
 * message), so no copy of the key space is ever held in memory. A witness gets the metadata alone, as an
 * ordinary message.
 */
import { hex } from '../base/hex.js';
import { MessageType, type Message } from '../raft/types.js';
import type { Logger } from '../config/log.js';
import type { EtcdServer } from '../node/etcd-server.js';
import type { DriverTransport } from '../node/driver/raft-driver.js';

/** What the bridge needs from the network: ordinary messages, and a MsgSnap with its data as a stream. */
export interface SnapshotNetwork extends DriverTransport {
  /** How the stream ended reaches Raft through the driver's reportSnapshot (the network reports it). */
  sendSnapshot(message: Message, chunks: AsyncIterable<Uint8Array>): Promise<void>;
}

export function snapshotBridge(network: SnapshotNetwork, server: EtcdServer, log: Logger): DriverTransport {
  const stream = async (m: Message): Promise<void> => {
    let exported: Awaited<ReturnType<EtcdServer['snapshotForFollower']>>;
    try {
      exported = await server.snapshotForFollower();
    } catch (error) {
      log.warn('cannot export a snapshot for a follower yet', { peer: hex(m.to), error: (error as Error).message });
      return server.driver.reportSnapshot(m.to, false);
    }
    try {
      await network.sendSnapshot({ ...m, snapshot: { meta: exported.meta, data: new Uint8Array(0) } }, exported.chunks);
    } catch {
      // reported to Raft by the network
    } finally {
      await exported.close();
    }
  };
  return {
    send(msgs: Message[]): void {
      const ready: Message[] = [];
      for (const m of msgs) {
        // A witness holds no state: it gets the snapshot's metadata alone (a new start for its log), the
        // transport's stream of the message's empty data.
        const streamed = m.type === MessageType.Snap && m.snapshot !== undefined && m.snapshot.data.length === 0 && !server.isWitness(m.to);
        if (streamed) void stream(m);
        else ready.push(m);
      }
      if (ready.length > 0) network.send(ready);
    },
  };
}
