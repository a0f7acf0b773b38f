/**
 * etcd_network_peer_round_trip_time_seconds{To}: the round trip to each other member, which etcd's Grafana
 * dashboard plots ("Peer round trip time") and etcd measures with its rafthttp prober (a GET /raft/probing
 * to every remote every 4 s, ConnReadTimeout - 1 s; buckets 0.1 ms doubling to ~0.8 s). Here a probe is a
 * `probe` request (answered by the peer's transport itself, inbound.ts), timed from sending it on an
 * authenticated connection to its answer (PeerTransport.probe). A probe that fails observes nothing: the
 * peer's send failures and active-peer gauge say it is unreachable.
 */
import { hex } from '../base/hex.js';
import type { NodeId } from '../raft/types.js';
import type { Registry } from '../metrics/metrics.js';

/** etcd's prober interval; also each probe's timeout, so a peer has at most one probe in flight. */
export const peerProbeIntervalMs = 4_000;

export interface PeerProberHost {
  transport: { probe(url: string, to: NodeId, timeoutMs: number): Promise<number> };
  /** The other members and the peer URL each is probed at, now. */
  peers(): Array<{ id: NodeId; url: string }>;
  registry: Registry;
  /** Runs the probes (default: a timer of its own; a member's ride its Raft tick, EtcdServer.every). */
  every?(ms: number, fn: () => void): { cancel(): void };
}

export interface PeerProber {
  /** No further probes; one in flight is not waited for (a dead peer's would hold a stop for its timeout). */
  stop(): void;
}

export function startPeerProber(h: PeerProberHost): PeerProber {
  const rtt = h.registry.histogram({
    name: 'etcd_network_peer_round_trip_time_seconds', help: 'Round-Trip-Time histogram between peers',
    labelNames: ['To'], buckets: Array.from({ length: 14 }, (_, i) => 0.0001 * 2 ** i),
  });
  let round: Promise<unknown> | undefined;
  const probeAll = (): void => {
    round ??= Promise.allSettled(h.peers().map(async (p) => {
      const ms = await h.transport.probe(p.url, p.id, peerProbeIntervalMs);
      rtt.observe(ms / 1000, { To: hex(p.id) });
    })).finally(() => (round = undefined));
  };
  const timer = h.every?.(peerProbeIntervalMs, probeAll) ?? unrefInterval(peerProbeIntervalMs, probeAll);
  probeAll();
  return { stop: () => timer.cancel() };
}

function unrefInterval(ms: number, fn: () => void): { cancel(): void } {
  const t = setInterval(fn, ms);
  t.unref();
  return { cancel: () => clearInterval(t) };
}
