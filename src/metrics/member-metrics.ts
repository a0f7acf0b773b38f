/**
 * etcd 3.5's metric families beyond the core few (server-metrics.ts), wherever we measure the same thing:
 * server identity and version, learner state, quota, WAL write bytes, backend commit latency, MVCC size,
 * keys, revisions, put/delete/range/txn totals, watch streams, lease grants/revokes/renewals, file
 * descriptors and virtual memory, and our storage profile (the peer network's families: peer/transport-metrics.ts).
 * Values owned by other parts are read at scrape time, through the narrow views below: metrics sits below the
 * node and knows nothing of EtcdServer.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { EventType } from '../mvcc/types.js';
import type { KvStore } from '../mvcc/kv-store.js';
import type { WatchableStore } from '../mvcc/watch-types.js';
import type { Wal } from '../wal/wal.js';
import type { GrpcMetrics } from './grpc-metrics.js';
import { etcdDurationBuckets, type Histogram, type Registry } from './metrics.js';

/** What the member's gauges read from the replicated node (EtcdServer satisfies it). */
export interface MemberMetricsNode {
  readonly state: { readonly store: Pick<KvStore, 'dbSizeBytes' | 'keyCount' | 'revision' | 'compactRevision' | 'backlogBytes'> };
  /** Every applied write's events, from whichever store is current (one restored from a snapshot too). */
  onWrite: WatchableStore['onWrite'];
  isLearner(): boolean;
  /** Times apply waited for a backend that fell behind (ApplyLoop.applyHold). */
  applyHolds(): number;
}

export interface MemberMetricsHost {
  registry: Registry;
  memberId: bigint;
  /** etcd's version this member reports (etcd_server_version, etcd_cluster_version). */
  etcdVersion: string;
  server: MemberMetricsNode;
  wal: Pick<Wal, 'profile' | 'metrics'>;
  /** Effective quota (0 means etcd's default, already resolved by the caller). */
  quotaBackendBytes: number;
  grpc: GrpcMetrics;
  /** The backend's open read views and iterators (LevelBackend.openReads). */
  backendOpenReads(): number;
}

/** etcd_disk_backend_commit_duration_seconds, observed by the backend wrapper (backend-timing.ts). */
export function registerBackendCommitHistogram(registry: Registry): Histogram {
  return registry.histogram({
    name: 'etcd_disk_backend_commit_duration_seconds', help: 'The latency distributions of commit called by backend.', buckets: etcdDurationBuckets,
  });
}

export function registerMemberMetrics(h: MemberMetricsHost): void {
  const r = h.registry;
  const id = h.memberId.toString(16);
  r.gauge({ name: 'etcd_server_id', help: 'Server or member ID in hexadecimal format. 1 for \'server_id\' label with current ID.', labelNames: ['server_id'] }).set(1, { server_id: id });
  r.gauge({ name: 'etcd_server_version', help: 'Which version is running. 1 for \'server_version\' label with current version.', labelNames: ['server_version'] })
    .set(1, { server_version: h.etcdVersion });
  r.gauge({ name: 'etcd_cluster_version', help: 'Which version is running. 1 for \'cluster_version\' label with current cluster version', labelNames: ['cluster_version'] })
    .set(1, { cluster_version: h.etcdVersion.split('.').slice(0, 2).join('.') });
  r.gauge({ name: 'etcd_server_quota_backend_bytes', help: 'Current backend storage quota size in bytes.' }).set(h.quotaBackendBytes);
  // `auto` may switch profile while running (wal/profile-calibration.ts): the profile is read at each collect.
  const profile = r.gauge({ name: 'etcetera_storage_profile', help: 'The WAL storage profile in use (1 for the chosen profile).', labelNames: ['profile'] });
  let profileShown: string = h.wal.profile;
  profile.set(1, { profile: profileShown });
  // Only a measured profile has a latency, and only a measured one is recalibrated.
  const measured = h.wal.metrics.measuredSyncLatencyMs === undefined ? undefined : r.gauge({
    name: 'etcetera_wal_measured_sync_latency_seconds', help: 'Median fdatasync latency behind the auto storage profile: probed at its first start, then the window median of its last recalibration.',
  });
  const recalibrations = r.counter({ name: 'etcetera_storage_profile_recalibrations_total', help: 'Times the auto storage profile switched profile from the WAL\'s own fdatasync latencies.' });
  const isLearner = r.gauge({ name: 'etcd_server_is_learner', help: 'Whether or not this member is a learner. 1 if is, 0 otherwise.' });
  const walBytes = r.gauge({ name: 'etcd_disk_wal_write_bytes_total', help: 'Total number of bytes written in WAL.' });
  const inUse = r.gauge({ name: 'etcd_mvcc_db_total_size_in_use_in_bytes', help: 'Total size of the underlying database logically in use in bytes.' });
  const keys = r.gauge({ name: 'etcd_debugging_mvcc_keys_total', help: 'Total number of keys.' });
  const current = r.gauge({ name: 'etcd_debugging_mvcc_current_revision', help: 'The current revision of store.' });
  const compacted = r.gauge({ name: 'etcd_debugging_mvcc_compact_revision', help: 'The revision of the last compaction in store.' });
  const backlog = r.gauge({ name: 'etcetera_backend_backlog_bytes', help: 'Applied state not yet written to the backend (memory held by the write buffer and queued flushes).' });
  const holds = r.counter({ name: 'etcetera_apply_holds_total', help: 'Times apply waited for a backend that fell behind the offered load.' });
  const openReads = r.gauge({ name: 'etcd_mvcc_db_open_read_transactions', help: 'The number of currently open read transactions' });
  r.onCollect(() => {
    const store = h.server.state.store;
    backlog.set(store.backlogBytes);
    holds.setTotal(h.server.applyHolds());
    isLearner.set(h.server.isLearner() ? 1 : 0);
    const wal = h.wal.metrics;
    walBytes.set(wal.bytesWritten);
    if (h.wal.profile !== profileShown) {
      profile.remove({ profile: profileShown });
      profileShown = h.wal.profile;
      profile.set(1, { profile: profileShown });
    }
    if (wal.measuredSyncLatencyMs !== undefined) measured?.set(wal.measuredSyncLatencyMs / 1000);
    recalibrations.setTotal(wal.profileRecalibrations);
    inUse.set(store.dbSizeBytes());
    keys.set(store.keyCount);
    current.set(store.revision);
    compacted.set(store.compactRevision);
    openReads.set(h.backendOpenReads());
  });
  registerWriteCounters(h);
  registerRequestCounters(h);
  registerFdMetrics(r);
}

/** Puts and deletes as applied on this member (every member applies every write, as etcd counts them). */
function registerWriteCounters(h: MemberMetricsHost): void {
  const puts = h.registry.counter({ name: 'etcd_mvcc_put_total', help: 'Total number of puts seen by this member.' });
  const deletes = h.registry.counter({ name: 'etcd_mvcc_delete_total', help: 'Total number of deletes seen by this member (keys deleted).' });
  const events = h.registry.counter({ name: 'etcd_debugging_mvcc_events_total', help: 'Total number of events sent by this member.' });
  // Counting needs no previous values: a listener that wanted them made every put read its key's old value
  // from LevelDB (~5% of a busy member's time, issue 22).
  h.server.onWrite((_revision, written) => {
    let p = 0;
    for (const e of written) if (e.type === EventType.Put) p += 1;
    puts.inc(p);
    deletes.inc(written.length - p);
    events.inc(written.length);
  }, { wantsPrevKv: () => false });
}

/** Counts etcd keeps deeper down, derived here from the calls this member answered. */
function registerRequestCounters(h: MemberMetricsHost): void {
  const r = h.registry;
  const ranges = r.counter({ name: 'etcd_mvcc_range_total', help: 'Total number of ranges seen by this member.' });
  const txns = r.counter({ name: 'etcd_mvcc_txn_total', help: 'Total number of txns seen by this member.' });
  const granted = r.counter({ name: 'etcd_debugging_lease_granted_total', help: 'The total number of granted leases.' });
  const revoked = r.counter({ name: 'etcd_debugging_lease_revoked_total', help: 'The total number of revoked leases.' });
  const renewed = r.counter({ name: 'etcd_debugging_lease_renewed_total', help: 'The number of renewed leases seen by the leader.' });
  const streams = r.gauge({ name: 'etcd_debugging_mvcc_watch_stream_total', help: 'Total number of watch streams.' });
  const counters: Record<string, Record<string, { counter: { inc(): void }; code: string }>> = {
    'etcdserverpb.KV': { Range: { counter: ranges, code: 'OK' }, Txn: { counter: txns, code: 'OK' } },
    'etcdserverpb.Lease': {
      LeaseGrant: { counter: granted, code: 'OK' }, LeaseRevoke: { counter: revoked, code: 'OK' }, LeaseKeepAlive: { counter: renewed, code: 'msg' },
    },
  };
  h.grpc.onHandled.push((service, method, code) => {
    if (service === 'etcdserverpb.Watch' && method === 'Watch' && code !== 'msg') streams.dec();
    const c = counters[service]?.[method];
    if (c !== undefined && c.code === code) c.counter.inc();
  });
  const watchLabels = { grpc_type: 'bidi_stream', grpc_service: 'etcdserverpb.Watch', grpc_method: 'Watch' };
  let seenStarted = 0;
  r.onCollect(() => {
    const started = h.grpc.started.get(watchLabels);
    streams.inc(started - seenStarted);
    seenStarted = started;
  });
}

/** etcd's os_fd_used / os_fd_limit and the Prometheus process_* fd and memory families (Linux /proc). */
function registerFdMetrics(r: Registry): void {
  let maxFds: number | undefined;
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    maxFds = m === null ? undefined : Number(m[1]);
    readdirSync('/proc/self/fd');
  } catch {
    return; // not Linux: no /proc
  }
  const open = r.gauge({ name: 'process_open_fds', help: 'Number of open file descriptors.' });
  const used = r.gauge({ name: 'os_fd_used', help: 'The number of used file descriptors.' });
  const virtual = r.gauge({ name: 'process_virtual_memory_bytes', help: 'Virtual memory size in bytes.' });
  if (maxFds !== undefined) {
    r.gauge({ name: 'process_max_fds', help: 'Maximum number of open file descriptors.' }).set(maxFds);
    r.gauge({ name: 'os_fd_limit', help: 'The file descriptor limit.' }).set(maxFds);
  }
  r.onCollect(() => {
    const n = readdirSync('/proc/self/fd').length;
    open.set(n);
    used.set(n);
    const vm = /^VmSize:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (vm !== null) virtual.set(Number(vm[1]) * 1024);
  });
}
