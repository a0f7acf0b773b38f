/**
 * etcd_server_heartbeat_send_failures_total, as etcd counts it (its raft node's timeoutDetector): a leader's
 * heartbeat to a peer that leaves more than twice the heartbeat interval after the previous one to that peer
 * was "sent late": the leader's loop was held up (a slow disk, a blocked event loop), and followers that wait
 * an election timeout for it may start an election. A heartbeat the transport then drops is not this counter's
 * (etcd_network_peer_sent_failures_total counts those). Times come from the member's scheduler.
 */
import type { Message, NodeId } from '../../raft/types.js';
import type { DriverTransport } from './raft-driver.js';

export interface HeartbeatWatchOptions {
  heartbeatMs: number;
  nowMs: () => number;
  /** A late heartbeat: to whom, and how far past the allowed gap. */
  onLate: (to: NodeId, exceededMs: number) => void;
}

export class HeartbeatWatch {
  readonly #o: HeartbeatWatchOptions;
  readonly #lastMs = new Map<NodeId, number>();
  /** The term of the heartbeats seen: a new term's leader starts afresh (etcd resets on becoming leader). */
  #term = -1;

  constructor(options: HeartbeatWatchOptions) {
    this.#o = options;
  }

  observe(messages: readonly Message[]): void {
    for (const m of messages) {
      if (m.type !== 'MsgHeartbeat') continue;
      if (m.term !== this.#term) {
        this.#term = m.term;
        this.#lastMs.clear();
      }
      const now = this.#o.nowMs();
      const last = this.#lastMs.get(m.to);
      this.#lastMs.set(m.to, now);
      const exceededMs = last === undefined ? 0 : now - last - 2 * this.#o.heartbeatMs;
      if (exceededMs > 0) this.#o.onLate(m.to, exceededMs);
    }
  }

  /** The transport the driver sends through, watching what passes. */
  wrap(transport: DriverTransport): DriverTransport {
    return {
      send: (messages) => {
        this.observe(messages);
        transport.send(messages);
      },
    };
  }
}
