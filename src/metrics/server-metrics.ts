/**
 * The member's Prometheus metrics: etcd's names where we measure the same thing (dashboards and alerts
 * written for etcd keep working), our own under `etcetera_`. Values owned by other modules (the WAL's
 * counters and fsync histogram, the store's size) are read at collect time, not pushed per event.
 */
import type { HistogramSnapshot } from '../wal/metrics.js';
import { Registry, registerProcessMetrics, type Counter, type Gauge, type Histogram } from './metrics.js';

export interface ServerMetrics {
  registry: Registry;
  leaderChanges: Counter;
  hasLeader: Gauge;
  isLeader: Gauge;
  proposalsCommitted: Gauge;
  proposalsApplied: Gauge;
  proposalsPending: Gauge;
  proposalsFailed: Counter;
  dbTotalSize: Gauge;
  /** /health checks that passed and failed (etcd counts them in its /health handler). */
  healthSuccess: Counter;
  healthFailures: Counter;
  /** Each Hash of the whole key space (etcd's storage hash operation). */
  hashSeconds: Histogram;
  /** Each hash at a revision: HashKV, and both sides of the corruption check (etcd's hash by revision). */
  hashRevSeconds: Histogram;
  /** Password checks by how they were answered: bcrypt run, a known-good password, refused unchecked. */
  passwordChecks: Counter;
  /** bcrypt hashes computed (UserAdd, UserChangePassword by an admin). */
  passwordHashes: Counter;
  /** Leader only: a heartbeat sent later than twice the heartbeat interval after the previous one to that peer. */
  heartbeatSendFailures: Counter;
  /** Requests whose apply took longer than slowApplyMs (etcd's warnApplyDuration). */
  slowApplies: Counter;
  /** Read index requests Raft did not answer within the retry interval, or answered for an older request. */
  slowReadIndexes: Counter;
  /** Read index requests that failed (leadership changed while they waited). */
  readIndexesFailed: Counter;
  /** Leader only: MemberPromote calls that promoted, and those refused, by the error's message. */
  learnerPromoteSuccesses: Counter;
  learnerPromoteFailures: Counter;
  /** How long each exported backend view stays open (src/node/maintenance/timed-snapshot.ts). */
  backendSnapshotSeconds: Histogram;
  /** Each snapshot received from the leader: its file's fsync, and its whole save (src/storage/snapshot-data.ts). */
  snapDbFsyncSeconds: Histogram;
  snapDbSaveSeconds: Histogram;
  /** The WAL's fsync histogram, given at construction and rendered at collect time (absent: none is rendered). */
  readonly walFsync?: () => HistogramSnapshot;
}


/** etcd 3.4's backend snapshot buckets: 10 ms doubling to 655.36 s (17 buckets). */
const backendSnapshotBuckets: readonly number[] = Array.from({ length: 17 }, (_, i) => 0.01 * 2 ** i);

/** etcd 3.4's snap fsync buckets: 1 ms doubling to 8.192 s. */
const snapFsyncBuckets: readonly number[] = Array.from({ length: 14 }, (_, i) => 0.001 * 2 ** i);
/** etcd 3.4's snap save buckets: 100 ms doubling to 51.2 s. */
const snapSaveBuckets: readonly number[] = Array.from({ length: 10 }, (_, i) => 0.1 * 2 ** i);

/** etcd's hash buckets: 10 ms doubling to 163.84 s. */
const hashBuckets: readonly number[] = Array.from({ length: 15 }, (_, i) => 0.01 * 2 ** i);

export interface ServerMetricsSources {
  /** The WAL's fsync histogram (wal.metrics.syncSeconds): the member's log is open before its metrics exist. */
  walFsync?: () => HistogramSnapshot;
}

export function createServerMetrics(sources: ServerMetricsSources = {}): ServerMetrics {
  const registry = new Registry();
  registerProcessMetrics(registry);
  const m: ServerMetrics = {
    ...(sources.walFsync !== undefined ? { walFsync: sources.walFsync } : {}),
    registry,
    leaderChanges: registry.counter({ name: 'etcd_server_leader_changes_seen_total', help: 'The number of leader changes seen.' }),
    hasLeader: registry.gauge({ name: 'etcd_server_has_leader', help: 'Whether or not a leader exists. 1 is existence, 0 is not.' }),
    isLeader: registry.gauge({ name: 'etcd_server_is_leader', help: 'Whether or not this member is a leader. 1 if is, 0 otherwise.' }),
    proposalsCommitted: registry.gauge({ name: 'etcd_server_proposals_committed_total', help: 'The total number of consensus proposals committed.' }),
    proposalsApplied: registry.gauge({ name: 'etcd_server_proposals_applied_total', help: 'The total number of consensus proposals applied.' }),
    proposalsPending: registry.gauge({ name: 'etcd_server_proposals_pending', help: 'The current number of pending proposals to commit.' }),
    proposalsFailed: registry.counter({ name: 'etcd_server_proposals_failed_total', help: 'The total number of failed proposals seen.' }),
    dbTotalSize: registry.gauge({ name: 'etcd_mvcc_db_total_size_in_bytes', help: 'Total size of the underlying database physically allocated in bytes.' }),
    healthSuccess: registry.counter({ name: 'etcd_server_health_success', help: 'The total number of successful health checks' }),
    healthFailures: registry.counter({ name: 'etcd_server_health_failures', help: 'The total number of failed health checks' }),
    hashSeconds: registry.histogram({ name: 'etcd_mvcc_hash_duration_seconds', help: 'The latency distribution of storage hash operation.', buckets: hashBuckets }),
    hashRevSeconds: registry.histogram({
      name: 'etcd_mvcc_hash_rev_duration_seconds', help: 'The latency distribution of storage hash by revision operation.', buckets: hashBuckets,
    }),
    passwordChecks: registry.counter({
      name: 'etcetera_auth_password_checks_total', help: 'Password checks by answer: bcrypt, known (no bcrypt), refused (unchecked).', labelNames: ['answer'],
    }),
    passwordHashes: registry.counter({ name: 'etcetera_auth_password_hashes_total', help: 'Passwords hashed with bcrypt.' }),
    heartbeatSendFailures: registry.counter({
      name: 'etcd_server_heartbeat_send_failures_total', help: 'The total number of leader heartbeat send failures (likely overloaded from slow disk).',
    }),
    slowApplies: registry.counter({ name: 'etcd_server_slow_apply_total', help: 'The total number of slow apply requests (likely overloaded from slow disk).' }),
    slowReadIndexes: registry.counter({
      name: 'etcd_server_slow_read_indexes_total',
      help: "The total number of pending read indexes not in sync with leader's or timed out read index requests.",
    }),
    readIndexesFailed: registry.counter({ name: 'etcd_server_read_indexes_failed_total', help: 'The total number of failed read indexes seen.' }),
    learnerPromoteSuccesses: registry.counter({
      name: 'etcd_server_learner_promote_successes', help: 'The total number of successful learner promotions while this member is leader.',
    }),
    learnerPromoteFailures: registry.counter({
      name: 'etcd_server_learner_promote_failures',
      help: 'The total number of failed learner promotions (likely learner not ready) while this member is leader.',
      labelNames: ['Reason'],
    }),
    backendSnapshotSeconds: registry.histogram({
      name: 'etcd_disk_backend_snapshot_duration_seconds', help: 'The latency distribution of backend snapshots.', buckets: backendSnapshotBuckets,
    }),
    snapDbFsyncSeconds: registry.histogram({
      name: 'etcd_snap_db_fsync_duration_seconds', help: 'The latency distributions of fsyncing .snap.db file', buckets: snapFsyncBuckets,
    }),
    snapDbSaveSeconds: registry.histogram({
      name: 'etcd_snap_db_save_total_duration_seconds', help: 'The total latency distributions of v3 snapshot save', buckets: snapSaveBuckets,
    }),
  };
  registry.readHistogram({ name: 'etcd_disk_wal_fsync_duration_seconds', help: 'The latency distributions of fsync called by WAL.' }, () => m.walFsync?.());
  return m;
}
