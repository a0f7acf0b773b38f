/**
 * The peer prober (etcd_network_peer_round_trip_time_seconds) at rest: one round at start, then each on the
 * runner it is given; a member's runner is its Raft tick (EtcdServer.every), so probing never wakes the
 * process by itself (issue 34).
 */
import { describe, expect, it } from 'vitest';
import { Registry } from '../../src/metrics/metrics.js';
import { peerProbeIntervalMs, startPeerProber } from '../../src/peer/peer-prober.js';

describe('the peer prober', () => {
  it('probes every peer at start and then on the runner it is given, and stops with it', async () => {
    const probed: string[] = [];
    let round: (() => void) | undefined;
    let canceled = false;
    const registry = new Registry();
    const prober = startPeerProber({
      transport: { probe: async (url) => (probed.push(url), 2) },
      peers: () => [{ id: 2n, url: 'http://b' }, { id: 3n, url: 'http://c' }],
      registry,
      every: (ms, fn) => {
        expect(ms).toBe(peerProbeIntervalMs);
        round = fn;
        return { cancel: () => void (canceled = true) };
      },
    });
    await new Promise((r) => setImmediate(r));
    round!();
    await new Promise((r) => setImmediate(r));
    prober.stop();
    expect(probed).toEqual(['http://b', 'http://c', 'http://b', 'http://c']);
    expect(canceled).toBe(true);
    expect(registry.expose()).toContain('etcd_network_peer_round_trip_time_seconds_count{To="2"} 2');
  });
});
