/**
 * The member's write counters (etcd_mvcc_put_total, …) need no previous values: registered as a listener that
 * wanted them, they made every put of a member without prev_kv watchers read its key's old value from LevelDB
 * (~5% of a busy member's time, issue 22). Observed as in watch-prev-kv-demand.test.ts: a probe listener that
 * never wants prevKv sees it exactly when some other listener asked for it. Also: the storage profile's
 * gauges follow `auto`'s recalibration (wal/profile-calibration.ts).
 */
import { describe, expect, it } from 'vitest';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import type { Event } from '../../src/mvcc/types.js';
import { registerGrpcMetrics } from '../../src/metrics/grpc-metrics.js';
import { registerMemberMetrics } from '../../src/metrics/member-metrics.js';
import { Registry } from '../../src/metrics/metrics.js';
import { putReq } from '../mvcc/helpers.js';

describe('member write counters', () => {
  it('count puts without asking the store for previous values', async () => {
    const store = await KvStore.open(new MemoryBackend());
    const registry = new Registry();
    registerMemberMetrics({
      registry,
      memberId: 1n,
      etcdVersion: '3.5.0',
      server: { state: { store }, isLearner: () => false, applyHolds: () => 0, onWrite: (l, o) => store.onWrite(l, o) },
      wal: { profile: 'ssd', metrics: { bytesWritten: 0, profileRecalibrations: 0 } as never },
      quotaBackendBytes: 0,
      grpc: registerGrpcMetrics(registry),
      backendOpenReads: () => 0,
    });
    const probe: Event[] = [];
    store.onWrite((_, events) => probe.push(...events), { wantsPrevKv: () => false });
    store.put(putReq('a', '1'));
    store.put(putReq('a', '2'));
    expect(probe.map((e) => e.prevKv)).toEqual([undefined, undefined]);
    expect(registry.expose()).toMatch(/^etcd_mvcc_put_total 2$/m);
  });
});

describe('member storage profile metrics', () => {
  it('follow a profile the auto calibration switched while running', async () => {
    const store = await KvStore.open(new MemoryBackend());
    const registry = new Registry();
    const wal = { profile: 'emmc' as 'emmc' | 'ssd', metrics: { bytesWritten: 0, measuredSyncLatencyMs: 4.18, profileRecalibrations: 0 } };
    registerMemberMetrics({
      registry,
      memberId: 1n,
      etcdVersion: '3.5.0',
      server: { state: { store }, isLearner: () => false, applyHolds: () => 0, onWrite: (l, o) => store.onWrite(l, o) },
      wal: wal as never,
      quotaBackendBytes: 0,
      grpc: registerGrpcMetrics(registry),
      backendOpenReads: () => 0,
    });
    expect(registry.expose()).toMatch(/^etcetera_storage_profile\{profile="emmc"\} 1$/m);
    Object.assign(wal, { profile: 'ssd', metrics: { bytesWritten: 0, measuredSyncLatencyMs: 0.25, profileRecalibrations: 1 } });
    const text = registry.expose();
    expect(text).toMatch(/^etcetera_storage_profile\{profile="ssd"\} 1$/m);
    expect(text).not.toMatch(/profile="emmc"/);
    expect(text).toMatch(/^etcetera_wal_measured_sync_latency_seconds 0.00025$/m);
    expect(text).toMatch(/^etcetera_storage_profile_recalibrations_total 1$/m);
  });
});
