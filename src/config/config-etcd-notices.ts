/**
 * etcd 3.5 flags (server/etcdmain/config.go) that have no effect here, each with the notice logged when it is
 * set, and the discovery flags, refused with a clear error (we cannot bootstrap through a discovery service,
 * and silently starting a lone member instead would split a cluster). Part of the one option table
 * (config-options.ts), so flags, environment variables and YAML keys accept exactly these names.
 */
import type { OptionKind, OptionSpec } from './option-spec.js';

type Row = [flag: string, kind: OptionKind, defaultText: string, notice: string];

const noEffect = (why: string): string => `accepted for etcd compatibility; ${why}`;

const rows: Row[] = [
  ['max-snapshots', 'uint', '5', noEffect('no snapshot files accumulate here (the backend is the snapshot; one marker is kept)')],
  ['max-wals', 'uint', '5', noEffect('WAL segments are preallocated, recycled and removed once a snapshot covers them')],
  ['initial-election-tick-advance', 'bool', 'true', noEffect('a restarted member campaigns after one randomized election timeout')],
  ['backend-bbolt-freelist-type', 'string', 'map', noEffect('the backend is LevelDB, not bbolt')],
  ['backend-batch-interval', 'duration', '0s', noEffect('the backend is written behind every applied batch')],
  ['backend-batch-limit', 'uint', '0', noEffect('the backend is written behind every applied batch')],
  ['socket-reuse-port', 'bool', 'false', noEffect('Node 20 cannot set SO_REUSEPORT on listeners')],
  ['socket-reuse-address', 'bool', 'false', noEffect('Node always sets SO_REUSEADDR on listeners')],
  ['raft-read-timeout', 'duration', '5s', noEffect('the peer transport detects dead connections by its own heartbeat timeouts')],
  ['raft-write-timeout', 'duration', '5s', noEffect('the peer transport detects dead connections by its own heartbeat timeouts')],
  ['strict-reconfig-check', 'bool', 'true', noEffect('membership changes that would lose quorum are always refused')],
  ['enable-v2', 'bool', 'false', noEffect('the v2 API is not served')],
  ['experimental-enable-v2v3', 'string', '', noEffect('the v2 API is not served')],
  ['v2-deprecation', 'string', 'not-yet', noEffect('there is no v2 store')],
  ['proxy', 'string', 'off', noEffect('proxy mode (deprecated in etcd 3.5) does not exist here')],
  ['proxy-failure-wait', 'uint', '5000', noEffect('proxy mode does not exist here')],
  ['proxy-refresh-interval', 'uint', '30000', noEffect('proxy mode does not exist here')],
  ['proxy-dial-timeout', 'uint', '1000', noEffect('proxy mode does not exist here')],
  ['proxy-write-timeout', 'uint', '5000', noEffect('proxy mode does not exist here')],
  ['proxy-read-timeout', 'uint', '0', noEffect('proxy mode does not exist here')],
  ['client-cert-file', 'string', '', noEffect('no client connection is made from this member to its own client port')],
  ['client-key-file', 'string', '', noEffect('no client connection is made from this member to its own client port')],
  ['peer-client-cert-file', 'string', '', noEffect('peers dial with --peer-cert-file/--peer-key-file')],
  ['peer-client-key-file', 'string', '', noEffect('peers dial with --peer-cert-file/--peer-key-file')],
  ['experimental-peer-skip-client-san-verification', 'bool', 'false', noEffect('peer certificates are never checked against the peer\'s address here')],
  ['cors', 'list', '*', noEffect('no CORS restrictions are applied')],
  ['host-whitelist', 'list', '*', noEffect('HTTP Host headers are not restricted')],
  ['enable-log-rotation', 'bool', 'false', noEffect('rotate log files with logrotate (copytruncate)')],
  ['log-rotation-config-json', 'string', '{"maxsize": 100, "maxage": 0, "maxbackups": 0, "localtime": false, "compress": false}', noEffect('rotate log files with logrotate (copytruncate)')],
  ['enable-pprof', 'bool', 'false', noEffect('there is no Go profiler; run node with --cpu-prof or --inspect instead')],
  ['metrics', 'string', 'basic', noEffect('the same metric families are exported at every level')],
  ['experimental-enable-distributed-tracing', 'bool', 'false', noEffect('OpenTelemetry tracing is not implemented')],
  ['experimental-distributed-tracing-address', 'string', 'localhost:4317', noEffect('OpenTelemetry tracing is not implemented')],
  ['experimental-distributed-tracing-service-name', 'string', 'etcd', noEffect('OpenTelemetry tracing is not implemented')],
  ['experimental-distributed-tracing-instance-id', 'string', '', noEffect('OpenTelemetry tracing is not implemented')],
  ['experimental-distributed-tracing-sampling-rate', 'uint', '0', noEffect('OpenTelemetry tracing is not implemented')],
  ['experimental-corrupt-check-time', 'duration', '0s', noEffect('the leader compares members\' hashes every 5 minutes')],
  ['experimental-compact-hash-check-enabled', 'bool', 'false', noEffect('the leader compares members\' hashes every 5 minutes')],
  ['experimental-compact-hash-check-time', 'duration', '1m0s', noEffect('the leader compares members\' hashes every 5 minutes')],
  ['experimental-enable-lease-checkpoint', 'bool', 'false', noEffect('lease checkpoints are always on')],
  ['experimental-enable-lease-checkpoint-persist', 'bool', 'false', noEffect('lease checkpoints are always persisted')],
  ['experimental-compaction-batch-limit', 'uint', '1000', noEffect('compaction deletes 1000 revisions per backend batch')],
  ['experimental-compaction-sleep-interval', 'duration', '10ms', noEffect('compaction batches are not paced')],
  ['experimental-downgrade-check-time', 'duration', '5s', noEffect('downgrades are not supported')],
  ['experimental-warning-apply-duration', 'duration', '100ms', noEffect('slow applies are not reported')],
  ['experimental-memory-mlock', 'bool', 'false', noEffect('memory is not locked')],
  ['experimental-txn-mode-write-with-shared-buffer', 'bool', 'true', noEffect('reads in write transactions always see the in-memory index')],
  ['experimental-stop-grpc-service-on-defrag', 'bool', 'false', noEffect('defragmentation does not stop the gRPC service')],
  ['experimental-bootstrap-defrag-threshold-megabytes', 'uint', '0', noEffect('LevelDB compacts itself; there is no bootstrap defragmentation')],
  ['experimental-snapshot-catchup-entries', 'uint', '5000', noEffect('5000 entries are kept behind a snapshot for slow followers')],
  ['next-cluster-version-compatible', 'bool', 'false', noEffect('downgrades are not supported')],
  ['discovery-fallback', 'string', 'proxy', noEffect('discovery is not supported')],
  ['discovery-srv-name', 'string', '', noEffect('discovery is not supported')],
  // etcd's own ignored legacy flags (etcdmain/config.go `ignored`), boolean there.
  ...['cluster-active-size', 'cluster-remove-delay', 'cluster-sync-interval', 'config', 'force', 'max-result-buffer', 'max-retry-attempts',
    'peer-heartbeat-interval', 'peer-election-timeout', 'retry-interval', 'snapshot', 'v', 'vv', 'debug'].map(
    (flag): Row => [flag, 'bool', 'false', 'ignored, as etcd ignores it'],
  ),
];

const discoveryRefusal = (flag: string): string =>
  `--${flag}: discovery bootstrap is not supported; list the members with --initial-cluster, or join with --server and --token`;

export const etcdCompatSpecs: OptionSpec[] = [
  ...rows.map(([flag, kind, defaultText, notice]): OptionSpec => ({ group: 'etcd', flag, kind, default: defaultText, help: notice, notice })),
  ...['discovery', 'discovery-srv', 'discovery-proxy'].map((flag): OptionSpec => ({
    group: 'etcd', flag, kind: 'string', default: '', help: 'refused: discovery is not supported', refuse: discoveryRefusal(flag),
  })),
];
