/**
 * The table of server options: one row per flag, with etcd's name, default and help where etcd has the flag.
 * Flags, `ETCETERA_*` environment variables and `--config-file` YAML keys all come from this table, so the
 * three sources can never disagree about what exists.
 */
import { snapshotCountDefault } from '../base/index.js';

export type OptionKind = 'string' | 'bool' | 'uint' | 'urls' | 'enum';

export interface OptionSpec {
  flag: string;
  kind: OptionKind;
  /** Default as flag text ('' = unset). */
  default: string;
  help: string;
  values?: readonly string[];
  group: 'member' | 'clustering' | 'security' | 'k3s' | 'logging';
}

const specs: OptionSpec[] = [
  { group: 'member', flag: 'name', kind: 'string', default: 'default', help: 'Human-readable name for this member.' },
  { group: 'member', flag: 'data-dir', kind: 'string', default: './etcetera-data', help: 'Path to the data directory.' },
  { group: 'member', flag: 'listen-client-urls', kind: 'urls', default: 'http://127.0.0.1:2379', help: 'List of URLs to listen on for client traffic.' },
  { group: 'member', flag: 'listen-peer-urls', kind: 'urls', default: 'http://127.0.0.1:2380', help: 'List of URLs to listen on for peer traffic.' },
  { group: 'member', flag: 'listen-metrics-urls', kind: 'urls', default: '', help: 'List of URLs to listen on for the metrics and health endpoints.' },
  { group: 'member', flag: 'heartbeat-interval', kind: 'uint', default: '100', help: 'Time (in milliseconds) of a heartbeat interval.' },
  { group: 'member', flag: 'election-timeout', kind: 'uint', default: '1000', help: 'Time (in milliseconds) for an election to timeout (at least 5 heartbeat intervals).' },
  { group: 'member', flag: 'snapshot-count', kind: 'uint', default: String(snapshotCountDefault), help: 'Number of committed transactions to trigger a snapshot to disk.' },
  { group: 'member', flag: 'quota-backend-bytes', kind: 'uint', default: '0', help: 'Raise alarms when backend size exceeds the given quota (0 defaults to 2 GiB).' },
  { group: 'member', flag: 'auto-compaction-mode', kind: 'enum', values: ['periodic', 'revision'], default: 'periodic', help: "Interpret 'auto-compaction-retention' as a duration ('periodic') or a revision count ('revision')." },
  { group: 'member', flag: 'auto-compaction-retention', kind: 'string', default: '0', help: "Auto compaction retention: hours or a duration like '5m' (periodic), or revisions. 0 disables it." },
  { group: 'member', flag: 'storage-profile', kind: 'enum', values: ['auto', 'ssd', 'emmc', 'sd'], default: 'auto', help: "Write-ahead log tuning for the device: 'auto' measures fsync latency at start." },
  { group: 'member', flag: 'config-file', kind: 'string', default: '', help: 'Path to a YAML file with options (keys are the flag names); flags and environment override it.' },
  { group: 'clustering', flag: 'initial-advertise-peer-urls', kind: 'urls', default: '', help: "This member's peer URLs to advertise to the rest of the cluster (default: --listen-peer-urls)." },
  { group: 'clustering', flag: 'advertise-client-urls', kind: 'urls', default: '', help: "This member's client URLs to advertise (default: --listen-client-urls)." },
  { group: 'clustering', flag: 'initial-cluster', kind: 'string', default: '', help: 'Initial cluster configuration for static bootstrapping: name=peerURL,… (default: this member alone).' },
  { group: 'clustering', flag: 'initial-cluster-state', kind: 'enum', values: ['new', 'existing'], default: 'new', help: "Initial cluster state ('new' or 'existing')." },
  { group: 'clustering', flag: 'initial-cluster-token', kind: 'string', default: 'etcd-cluster', help: 'Initial cluster token for the cluster during bootstrap.' },
  { group: 'security', flag: 'cert-file', kind: 'string', default: '', help: 'Path to the client server TLS cert file.' },
  { group: 'security', flag: 'key-file', kind: 'string', default: '', help: 'Path to the client server TLS key file.' },
  { group: 'security', flag: 'trusted-ca-file', kind: 'string', default: '', help: 'Path to the client server TLS trusted CA cert file.' },
  { group: 'security', flag: 'client-cert-auth', kind: 'bool', default: 'false', help: 'Enable client cert authentication.' },
  { group: 'security', flag: 'peer-cert-file', kind: 'string', default: '', help: 'Path to the peer server TLS cert file.' },
  { group: 'security', flag: 'peer-key-file', kind: 'string', default: '', help: 'Path to the peer server TLS key file.' },
  { group: 'security', flag: 'peer-trusted-ca-file', kind: 'string', default: '', help: 'Path to the peer server TLS trusted CA file.' },
  { group: 'security', flag: 'peer-client-cert-auth', kind: 'bool', default: 'false', help: 'Enable peer client cert authentication.' },
  { group: 'k3s', flag: 'cluster-init', kind: 'bool', default: 'false', help: 'Start a new cluster with this member as its only voter (token from --token, or generated into <data-dir>/token).' },
  { group: 'k3s', flag: 'server', kind: 'string', default: '', help: 'Join the cluster through the member at this peer URL (needs --token); added as a learner, promoted when caught up.' },
  { group: 'k3s', flag: 'token', kind: 'string', default: '', help: 'The cluster join token (peers prove they know it; it is never sent).' },
  { group: 'logging', flag: 'log-level', kind: 'enum', values: ['debug', 'info', 'warn', 'error', 'fatal'], default: 'info', help: 'Log level: debug, info, warn, error or fatal.' },
];

export const optionSpecs: ReadonlyMap<string, OptionSpec> = new Map(specs.map((s) => [s.flag, s]));

/**
 * etcd options we accept in YAML files and flags for compatibility but do not act on: warned about, not
 * refused, so configuration written for etcd still starts us.
 */
export const ignoredEtcdOptions: ReadonlySet<string> = new Set([
  'logger', 'log-outputs', 'enable-v2', 'enable-pprof', 'max-snapshots', 'max-wals', 'metrics', 'strict-reconfig-check',
  'pre-vote', 'initial-election-tick-advance', 'enable-grpc-gateway', 'force-new-cluster', 'debug',
]);

/** `data-dir` → `ETCETERA_DATA_DIR`. */
export function envName(flag: string): string {
  return `ETCETERA_${flag.toUpperCase().replace(/-/g, '_')}`;
}

const groupTitles: Record<OptionSpec['group'], string> = {
  member: 'Member',
  clustering: 'Clustering (etcd static bootstrap)',
  security: 'Security',
  k3s: 'Joining (k3s style)',
  logging: 'Logging',
};

export function helpText(): string {
  const lines = [
    'Usage: etcetera server [flags]',
    '',
    'A Raft-replicated key-value store speaking the etcd v3 gRPC API.',
    'Every flag may also be set as an ETCETERA_* environment variable (e.g. ETCETERA_DATA_DIR) or as a key of the',
    'YAML --config-file. Precedence: flags, then environment, then config file, then defaults.',
  ];
  for (const group of Object.keys(groupTitles) as OptionSpec['group'][]) {
    lines.push('', `${groupTitles[group]}:`, '');
    for (const spec of specs.filter((s) => s.group === group)) {
      const shown = spec.kind === 'bool' ? `--${spec.flag}` : `--${spec.flag} '${spec.default}'`;
      lines.push(`  ${shown}`, `      ${spec.help}`);
    }
  }
  lines.push('', '  --help, -h', '      Show this help.', '');
  return lines.join('\n');
}
