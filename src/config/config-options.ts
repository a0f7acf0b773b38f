/**
 * The table of server options: one row per flag, with etcd's name, default and help where etcd has the flag.
 * Flags, `ETCETERA_*` (and etcd's `ETCD_*`) environment variables and `--config-file` YAML keys all come from
 * this table, so the sources can never disagree about what exists.
 *
 * Every etcd 3.5 flag is a row: those we act on here (this file), and those accepted for compatibility with
 * a logged notice or refused with a clear error (config-etcd-notices.ts). `optionSpecs` is the one table.
 */
import { requestBytesMax, snapshotCountDefault, storageEnduranceTbwDefault, storageLifeWarningYearsDefault, txnOpsMax } from '../base/index.js';
import { etcdCompatSpecs } from './config-etcd-notices.js';
import { s3OptionSpecs } from './s3-options.js';

export type { OptionGroup, OptionKind, OptionSpec } from './option-spec.js';
import type { OptionGroup, OptionSpec } from './option-spec.js';

const u = (n: number): string => String(n);

const specs: OptionSpec[] = [
  { group: 'member', flag: 'name', kind: 'string', default: 'default', help: 'Human-readable name for this member.' },
  { group: 'member', flag: 'data-dir', kind: 'string', default: './etcetera-data', help: 'Path to the data directory.' },
  { group: 'member', flag: 'wal-dir', kind: 'string', default: '', help: 'Path to the dedicated wal directory (default: <data-dir>/member/wal).' },
  { group: 'member', flag: 'listen-client-urls', kind: 'urls', default: 'http://127.0.0.1:2379', help: 'List of URLs to listen on for client grpc traffic and http as long as --listen-client-http-urls is not specified.' },
  { group: 'member', flag: 'listen-client-http-urls', kind: 'urls', default: '', help: 'List of URLs to listen on for http only client traffic. Enabling this flag removes http services from --listen-client-urls.' },
  { group: 'member', flag: 'listen-peer-urls', kind: 'urls', default: 'http://127.0.0.1:2380', help: 'List of URLs to listen on for peer traffic.' },
  { group: 'member', flag: 'listen-metrics-urls', kind: 'urls', default: '', help: 'List of URLs to listen on for the metrics and health endpoints.' },
  { group: 'member', flag: 'heartbeat-interval', kind: 'uint', default: '100', help: 'Time (in milliseconds) of a heartbeat interval.' },
  { group: 'member', flag: 'election-timeout', kind: 'uint', default: '1000', help: 'Time (in milliseconds) for an election to timeout (at least 5 heartbeat intervals).' },
  { group: 'member', flag: 'snapshot-count', kind: 'uint', default: u(snapshotCountDefault), help: 'Number of committed transactions to trigger a snapshot to disk.' },
  { group: 'member', flag: 'quota-backend-bytes', kind: 'uint', default: '0', help: 'Raise alarms when backend size exceeds the given quota (0 defaults to 2 GiB).' },
  { group: 'member', flag: 'auto-compaction-mode', kind: 'enum', values: ['periodic', 'revision'], default: 'periodic', help: "Interpret 'auto-compaction-retention' as a duration ('periodic') or a revision count ('revision')." },
  { group: 'member', flag: 'auto-compaction-retention', kind: 'string', default: '0', help: "Auto compaction retention: hours or a duration like '5m' (periodic), or revisions. 0 disables it." },
  { group: 'member', flag: 'storage-profile', kind: 'enum', values: ['auto', 'remeasure', 'ssd', 'emmc', 'sd'], default: 'auto', help: "Write-ahead log tuning for the device: 'auto' measures fsync latency once and remembers it in the data dir; 'remeasure' measures again." },
  { group: 'member', flag: 'storage-endurance-tbw', kind: 'string', default: u(storageEnduranceTbwDefault), help: "The data disk's write endurance in terabytes written (the card's or SSD's rating; the default is a conservative figure for an ordinary SD card). Projects the disk's life at the current write rate (etcetera status, etcetera_disk_projected_life_years)." },
  { group: 'member', flag: 'storage-life-warning-years', kind: 'string', default: u(storageLifeWarningYearsDefault), help: 'Log a warning and set etcetera_disk_life_warning when the projected disk life drops below this many years.' },
  { group: 'member', flag: 'config-file', kind: 'string', default: '', help: 'Path to a YAML file with options (keys are etcd\'s config-file names); flags and environment override it.' },
  { group: 'member', flag: 'unsafe-no-fsync', kind: 'bool', default: 'false', help: 'Disables fsync, unsafe, will cause data loss.' },
  { group: 'member', flag: 'force-new-cluster', kind: 'bool', default: 'false', help: 'Force to create a new one member cluster.' },
  { group: 'clustering', flag: 'initial-advertise-peer-urls', kind: 'urls', default: '', help: "This member's peer URLs to advertise to the rest of the cluster (default: --listen-peer-urls)." },
  { group: 'clustering', flag: 'advertise-client-urls', kind: 'urls', default: '', help: "This member's client URLs to advertise (default: --listen-client-urls)." },
  { group: 'clustering', flag: 'initial-cluster', kind: 'string', default: '', help: 'Initial cluster configuration for static bootstrapping: name=peerURL,… (default: this member alone).' },
  { group: 'clustering', flag: 'initial-cluster-state', kind: 'enum', values: ['new', 'existing'], default: 'new', help: "Initial cluster state ('new' or 'existing')." },
  { group: 'clustering', flag: 'initial-cluster-witnesses', kind: 'string', default: '', help: 'Names of --initial-cluster members that are witnesses (etcetera witness: votes, holds no data); give the same list to every member.' },
  { group: 'clustering', flag: 'initial-cluster-token', kind: 'string', default: 'etcd-cluster', help: 'Initial cluster token for the cluster during bootstrap.' },
  { group: 'clustering', flag: 'pre-vote', kind: 'bool', default: 'true', help: 'Enable to run an additional Raft election phase.' },
  { group: 'security', flag: 'cert-file', kind: 'string', default: '', help: 'Path to the client server TLS cert file.' },
  { group: 'security', flag: 'key-file', kind: 'string', default: '', help: 'Path to the client server TLS key file.' },
  { group: 'security', flag: 'trusted-ca-file', kind: 'string', default: '', help: 'Path to the client server TLS trusted CA cert file.' },
  { group: 'security', flag: 'client-cert-auth', kind: 'bool', default: 'false', help: 'Enable client cert authentication.' },
  { group: 'security', flag: 'client-cert-allowed-cn', kind: 'list', default: '', help: 'Comma-separated list of allowed CNs for client cert authentication (etcd\'s YAML client-transport-security.allowed-cn).' },
  { group: 'security', flag: 'client-cert-allowed-hostname', kind: 'list', default: '', help: 'Comma-separated list of allowed SAN hostnames for client cert authentication.' },
  { group: 'security', flag: 'client-crl-file', kind: 'string', default: '', help: 'Path to the client certificate revocation list file.' },
  { group: 'security', flag: 'auto-tls', kind: 'bool', default: 'false', help: 'Client TLS using generated certificates.' },
  { group: 'security', flag: 'peer-cert-file', kind: 'string', default: '', help: 'Path to the peer server TLS cert file.' },
  { group: 'security', flag: 'peer-key-file', kind: 'string', default: '', help: 'Path to the peer server TLS key file.' },
  { group: 'security', flag: 'peer-trusted-ca-file', kind: 'string', default: '', help: 'Path to the peer server TLS trusted CA file.' },
  { group: 'security', flag: 'peer-client-cert-auth', kind: 'bool', default: 'false', help: 'Enable peer client cert authentication.' },
  { group: 'security', flag: 'peer-cert-allowed-cn', kind: 'list', default: '', help: 'Comma-separated list of allowed CNs for inter-peer TLS authentication.' },
  { group: 'security', flag: 'peer-cert-allowed-hostname', kind: 'list', default: '', help: 'Comma-separated list of allowed SAN hostnames for inter-peer TLS authentication.' },
  { group: 'security', flag: 'peer-crl-file', kind: 'string', default: '', help: 'Path to the peer certificate revocation list file.' },
  { group: 'security', flag: 'peer-auto-tls', kind: 'bool', default: 'false', help: 'Peer TLS using generated certificates.' },
  { group: 'security', flag: 'self-signed-cert-validity', kind: 'uint', default: '1', help: 'The validity period of the client and peer certificates, unit is year.' },
  { group: 'security', flag: 'cipher-suites', kind: 'list', default: '', help: 'Comma-separated list of supported TLS cipher suites between client/server and peers (Go names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256; empty: the defaults).' },
  { group: 'security', flag: 'tls-min-version', kind: 'enum', values: ['TLS1.2', 'TLS1.3'], default: 'TLS1.2', help: 'Minimum TLS version supported. Possible values: TLS1.2, TLS1.3.' },
  { group: 'security', flag: 'tls-max-version', kind: 'enum', values: ['', 'TLS1.2', 'TLS1.3'], default: '', help: 'Maximum TLS version supported. Possible values: TLS1.2, TLS1.3 (empty: the newest).' },
  { group: 'security', flag: 'auth-token', kind: 'string', default: 'simple', help: "Specify auth token specific options ('simple' or 'jwt,pub-key=…,priv-key=…,sign-method=…')." },
  { group: 'security', flag: 'bcrypt-cost', kind: 'uint', default: '10', help: 'Specify bcrypt algorithm cost factor for auth password hashing.' },
  { group: 'security', flag: 'auth-token-ttl', kind: 'uint', default: '300', help: 'The lifetime in seconds of the auth token.' },
  { group: 'limits', flag: 'max-txn-ops', kind: 'uint', default: u(txnOpsMax), help: 'Maximum number of operations permitted in a transaction.' },
  { group: 'limits', flag: 'max-request-bytes', kind: 'uint', default: u(requestBytesMax), help: 'Maximum client request size in bytes the server will accept.' },
  { group: 'limits', flag: 'max-concurrent-streams', kind: 'uint', default: u(2 ** 32 - 1), help: 'Maximum concurrent streams that each client can open at a time.' },
  { group: 'limits', flag: 'grpc-keepalive-min-time', kind: 'duration', default: '5s', help: 'Minimum interval duration that a client should wait before pinging server.' },
  { group: 'limits', flag: 'grpc-keepalive-interval', kind: 'duration', default: '2h0m0s', help: 'Frequency duration of server-to-client ping to check if a connection is alive (0 to disable).' },
  { group: 'limits', flag: 'grpc-keepalive-timeout', kind: 'duration', default: '20s', help: 'Additional duration of wait before closing a non-responsive connection (0 to disable).' },
  { group: 'limits', flag: 'grpc-server', kind: 'enum', values: ['', 'grpc-js', 'h2', 'frames'], default: '', help: "The gRPC server on the client ports: 'frames', etcetera's own on its own HTTP/2 framing (the default), 'h2', the same on node:http2, or 'grpc-js' (issue 34; empty: $ETCETERA_GRPC_SERVER, else frames)." },
  { group: 'limits', flag: 'enable-grpc-gateway', kind: 'bool', default: 'true', help: 'Enable GRPC gateway (the JSON API under /v3 on the client port).' },
  { group: 'experimental', flag: 'experimental-watch-progress-notify-interval', kind: 'duration', default: '10m0s', help: 'Duration of periodic watch progress notifications.' },
  { group: 'experimental', flag: 'experimental-initial-corrupt-check', kind: 'bool', default: 'false', help: 'Enable to check data corruption before serving any client/peer traffic.' },
  { group: 'k3s', flag: 'cluster-init', kind: 'bool', default: 'false', help: 'Start a new cluster with this member as its only voter (token from --token, or generated into <data-dir>/token).' },
  { group: 'k3s', flag: 'server', kind: 'string', default: '', help: 'Join the cluster through the member at this URL, its client or its peer URL (needs --token); added as a learner, promoted when caught up.' },
  { group: 'k3s', flag: 'token', kind: 'string', default: '', help: 'The cluster join token (peers prove they know it; it is never sent).' },
  { group: 'k3s', flag: 'cluster-reset', kind: 'bool', default: 'false', help: 'Forget all peers and become sole member of a new cluster (as --force-new-cluster), then exit; restart without the flag.' },
  { group: 'k3s', flag: 'cluster-reset-restore-path', kind: 'string', default: '', help: 'With --cluster-reset: path to a snapshot file to restore first.' },
  { group: 'snapshots', flag: 'snapshot-schedule', kind: 'string', default: '0 */12 * * *', help: "Snapshot interval as a cron spec (5 fields, or 6 with seconds first, or '@every 30s', '@hourly'; local time). Empty disables." },
  { group: 'snapshots', flag: 'snapshot-retention', kind: 'uint', default: '5', help: 'Number of scheduled snapshots to keep.' },
  { group: 'snapshots', flag: 'snapshot-dir', kind: 'string', default: '', help: 'Directory of scheduled snapshots (default: <data-dir>/snapshots).' },
  { group: 'snapshots', flag: 'snapshot-compress', kind: 'bool', default: 'false', help: 'Compress scheduled snapshots with gzip (name ends in .gz).' },
  { group: 'logging', flag: 'logger', kind: 'enum', values: ['zap'], default: 'zap', help: "Structured JSON-lines logging ('zap', etcd's only logger since 3.5)." },
  { group: 'logging', flag: 'log-outputs', kind: 'list', default: 'default', help: "Where logs go: 'default' or 'stderr', 'stdout', or file paths (comma separated)." },
  { group: 'logging', flag: 'log-level', kind: 'enum', values: ['debug', 'info', 'warn', 'error', 'panic', 'fatal'], default: 'info', help: 'Log level: debug, info, warn, error, panic or fatal.' },
];

export const optionSpecs: ReadonlyMap<string, OptionSpec> = new Map([...specs, ...s3OptionSpecs, ...etcdCompatSpecs].map((s) => [s.flag, s]));

/** `data-dir` → `ETCETERA_DATA_DIR` (etcd's own `ETCD_DATA_DIR` is read too). */
export function envName(flag: string, prefix: 'ETCETERA' | 'ETCD' = 'ETCETERA'): string {
  return `${prefix}_${flag.toUpperCase().replace(/-/g, '_')}`;
}

const groupTitles: Record<OptionGroup, string> = {
  member: 'Member',
  clustering: 'Clustering (etcd static bootstrap)',
  security: 'Security',
  limits: 'Requests and gRPC',
  experimental: 'Experimental (etcd)',
  k3s: 'Joining (k3s style)',
  snapshots: 'Scheduled snapshots and off-site copies in an S3 bucket (k3s style)',
  logging: 'Logging',
  etcd: "etcd flags accepted for compatibility (no effect here; a notice is logged when set)",
};

export function helpText(): string {
  const lines = [
    'Usage: etcetera server [flags]',
    '',
    'A Raft-replicated key-value store speaking the etcd v3 gRPC API.',
    'Every flag may also be set as an ETCETERA_* (or etcd\'s ETCD_*) environment variable (e.g. ETCETERA_DATA_DIR) or',
    'as a key of the YAML --config-file. Precedence: flags, then environment, then config file, then defaults.',
  ];
  for (const group of Object.keys(groupTitles) as OptionGroup[]) {
    lines.push('', `${groupTitles[group]}:`, '');
    for (const spec of [...optionSpecs.values()].filter((s) => s.group === group)) {
      const shown = spec.kind === 'bool' ? `--${spec.flag}` : `--${spec.flag} '${spec.default}'`;
      lines.push(`  ${shown}`, `      ${spec.notice ?? spec.refuse ?? spec.help}`);
    }
  }
  lines.push('', '  --help, -h', '      Show this help.', '  --version', '      Print the version and exit.', '');
  return lines.join('\n');
}
