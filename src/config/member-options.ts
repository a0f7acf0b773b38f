/**
 * The typed options of one etcetera member, as an embedding host passes them (the CLI maps its flags to
 * these). Names follow etcd's flags.
 */
import { storageEnduranceTbwDefault, storageLifeWarningYearsDefault } from '../base/limits.js';
import type { ProfileChoice } from '../wal/profiles.js';
import type { Logger } from './log.js';
import type { S3Options } from './s3-options.js';
import type { TestFault } from './test-faults.js';
import type { TlsFiles } from './tls-files.js';

export type ClusterBootstrap =
  /** k3s `--cluster-init`: a new cluster with this member as its only voter. */
  | { kind: 'init' }
  /** k3s `--server URL --token T`: join through any member, as a learner promoted once caught up. */
  | { kind: 'join'; serverUrl: string }
  /**
   * etcd's static bootstrap: `--initial-cluster` with `--initial-cluster-state new|existing`; `witnesses`
   * (`--initial-cluster-witnesses`, the same on every member) names the initial members that are witnesses.
   */
  | {
      kind: 'static';
      initialCluster: Array<{ name: string; peerUrls: string[] }>;
      state: 'new' | 'existing';
      clusterToken: string;
      witnesses?: string[];
    };

export interface ScheduledSnapshots {
  /** A cron spec (src/config/cron.ts). */
  schedule: string;
  /** How many of this member's scheduled snapshots to keep (the oldest go first). */
  retention: number;
  dir: string;
  /** gzip each snapshot (name ends in .gz). */
  compress: boolean;
}

export type { S3Options };

export type { TlsFiles };

/** etcd --cipher-suites, --tls-min-version, --tls-max-version; applies to client and peer TLS alike. */
export interface TlsPolicy {
  /** OpenSSL cipher list for TLS 1.2 (from etcd's Go suite names); undefined: Node's defaults. */
  ciphers?: string;
  minVersion: 'TLSv1.2' | 'TLSv1.3';
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
}

/** etcd --auto-tls / --peer-auto-tls: self-signed certificates generated at start under the data dir. */
export interface AutoTls {
  client: boolean;
  peer: boolean;
  /** --self-signed-cert-validity, in years. */
  validityYears: number;
  /** --client-crl-file / --peer-crl-file, applied to the generated certificates' listeners. */
  clientCrlFile?: string;
  peerCrlFile?: string;
}

/** etcd's client-facing gRPC limits (--max-request-bytes, --max-txn-ops, --max-concurrent-streams, keepalive). */
export interface GrpcLimits {
  requestBytesMax: number;
  txnOpsMax: number;
  concurrentStreamsMax: number;
  keepAliveMinTimeMs: number;
  /** 0 disables server pings. */
  keepAliveIntervalMs: number;
  keepAliveTimeoutMs: number;
}

/** etcd --auth-token, --bcrypt-cost, --auth-token-ttl (read by the auth layer). */
export interface AuthOptions {
  /** 'simple', or 'jwt,pub-key=…,priv-key=…,sign-method=…,ttl=…' as etcd's flag. */
  token: string;
  bcryptCost: number;
  tokenTtlSeconds: number;
}

/** The URL options a member is reached and listens by. */
export const memberUrlKeys = ['listenClientUrls', 'advertiseClientUrls', 'listenPeerUrls', 'initialAdvertisePeerUrls', 'listenMetricsUrls'] as const;
export type MemberUrlKey = (typeof memberUrlKeys)[number];

export interface MemberOptions {
  name: string;
  dataDir: string;
  listenClientUrls: string[];
  advertiseClientUrls: string[];
  listenPeerUrls: string[];
  initialAdvertisePeerUrls: string[];
  listenMetricsUrls: string[];
  /**
   * The URL options left at their defaults (not given on the command line, in the config file or by the
   * embedding host): a restart takes the URLs the member registered instead (main/registered-urls.ts).
   */
  defaultedUrls?: ReadonlyArray<MemberUrlKey>;
  heartbeatIntervalMs: number;
  electionTimeoutMs: number;
  snapshotCount: number;
  quotaBackendBytes: number;
  autoCompaction?: { mode: 'periodic' | 'revision'; retention: string };
  storageProfile: ProfileChoice;
  /** The data disk's write endurance, terabytes (--storage-endurance-tbw): projects its life (main/wear-watch.ts). */
  storageEnduranceTbw: number;
  /** Below this projected disk life, years, the member warns (--storage-life-warning-years). */
  storageLifeWarningYears: number;
  bootstrap: ClusterBootstrap;
  /**
   * `etcetera witness`: join as a witness member (src/raft/witness.ts; main/witness.ts), which votes and keeps
   * the Raft log's tail but holds no data and serves no client. Only through a join (--server).
   */
  witness?: boolean;
  /** The join token; for `init` without one, generated and written to `<data-dir>/token`. */
  token?: string;
  clientTls?: TlsFiles;
  peerTls?: TlsFiles;
  /** etcd --wal-dir: the log in its own directory (default <data-dir>/member/wal). */
  walDir?: string;
  /** etcd --listen-client-http-urls: HTTP/1.1-only client URLs (the gateway, /health, /metrics). */
  listenClientHttpUrls?: string[];
  /** Raft PreVote (etcd --pre-vote, default true). */
  preVote?: boolean;
  /** etcd --unsafe-no-fsync: the WAL never syncs. Loses acknowledged writes on a crash; tests only. */
  unsafeNoFsync?: boolean;
  /**
   * etcd's --force-new-cluster / k3s's --cluster-reset: make this member the only member of its cluster
   * (src/backup/cluster-reset.ts) before it starts. Ignored for a new data directory.
   */
  forceNewCluster?: boolean;
  autoTls?: AutoTls;
  tlsPolicy?: TlsPolicy;
  grpcLimits?: GrpcLimits;
  auth?: AuthOptions;
  /** etcd --enable-grpc-gateway (default true): the JSON API under /v3 on the client port. */
  enableGrpcGateway?: boolean;
  /** --grpc-server: grpc-js's server, our own on node:http2, or on our own frames (api/grpc/grpc-transport.ts); absent: its default. */
  grpcServer?: 'grpc-js' | 'h2' | 'frames';
  /** etcd --experimental-initial-corrupt-check: compare HashKV with peers before serving; refuse on mismatch. */
  initialCorruptCheck?: boolean;
  /** etcd --experimental-watch-progress-notify-interval, for watchers created with progress_notify. */
  watchProgressNotifyIntervalMs?: number;
  logger: Logger;
  /** Scheduled snapshots (src/backup/snapshot-scheduler.ts), k3s's etcd-snapshot schedule; absent: none. */
  scheduledSnapshots?: ScheduledSnapshots;
  /** k3s's --etcd-s3: each scheduled snapshot is also uploaded to this bucket (src/backup/offsite-uploads.ts). */
  etcdS3?: S3Options;
  /** Test-only: break the server on purpose (src/config/test-faults.ts). Never set in production. */
  unsafeTestFaults?: Set<TestFault>;
}

/** What an embedding host must give; everything else has etcd's default. */
export type MemberOptionsInput = Partial<Omit<MemberOptions, 'logger'>> & { logger?: Logger };

/**
 * Fill in etcd's defaults (name "default", data dir "./etcetera-data", client 127.0.0.1:2379, peer
 * 127.0.0.1:2380, heartbeat 100 ms, election 1000 ms) and reject inconsistent options.
 */
export function withMemberDefaults(input: MemberOptionsInput, logger: Logger): MemberOptions {
  const listenClientUrls = input.listenClientUrls ?? ['http://127.0.0.1:2379'];
  const listenPeerUrls = input.listenPeerUrls ?? ['http://127.0.0.1:2380'];
  const o: MemberOptions = {
    name: input.name ?? 'default',
    dataDir: input.dataDir ?? './etcetera-data',
    listenClientUrls,
    advertiseClientUrls: input.advertiseClientUrls ?? listenClientUrls,
    listenPeerUrls,
    initialAdvertisePeerUrls: input.initialAdvertisePeerUrls ?? listenPeerUrls,
    listenMetricsUrls: input.listenMetricsUrls ?? [],
    defaultedUrls: input.defaultedUrls ?? memberUrlKeys.filter((k) => input[k] === undefined),
    heartbeatIntervalMs: input.heartbeatIntervalMs ?? 100,
    electionTimeoutMs: input.electionTimeoutMs ?? 1000,
    snapshotCount: input.snapshotCount ?? 10_000,
    quotaBackendBytes: input.quotaBackendBytes ?? 0,
    storageProfile: input.storageProfile ?? 'auto',
    storageEnduranceTbw: input.storageEnduranceTbw ?? storageEnduranceTbwDefault,
    storageLifeWarningYears: input.storageLifeWarningYears ?? storageLifeWarningYearsDefault,
    bootstrap: input.bootstrap ?? { kind: 'init' },
    logger: input.logger ?? logger,
    ...(input.autoCompaction !== undefined ? { autoCompaction: input.autoCompaction } : {}),
    ...(input.token !== undefined ? { token: input.token } : {}),
    ...(input.scheduledSnapshots !== undefined ? { scheduledSnapshots: input.scheduledSnapshots } : {}),
    ...(input.etcdS3 !== undefined ? { etcdS3: input.etcdS3 } : {}),
    ...(input.clientTls !== undefined ? { clientTls: input.clientTls } : {}),
    ...(input.peerTls !== undefined ? { peerTls: input.peerTls } : {}),
    ...definedOf(input, etcdOptionalKeys),
  };
  if (o.electionTimeoutMs < 5 * o.heartbeatIntervalMs) {
    throw new TypeError(`election timeout ${o.electionTimeoutMs} ms must be at least 5 × the heartbeat interval (${o.heartbeatIntervalMs} ms), as etcd requires`);
  }
  if (o.snapshotCount < 1) throw new TypeError('snapshotCount must be positive');
  if (!(o.storageEnduranceTbw > 0) || !(o.storageLifeWarningYears > 0)) throw new TypeError('storageEnduranceTbw and storageLifeWarningYears must be above zero');
  return o;
}

const etcdOptionalKeys = [
  'walDir', 'listenClientHttpUrls', 'preVote', 'unsafeNoFsync', 'forceNewCluster', 'autoTls', 'tlsPolicy', 'grpcLimits', 'auth',
  'enableGrpcGateway', 'grpcServer', 'initialCorruptCheck', 'watchProgressNotifyIntervalMs',
] as const satisfies ReadonlyArray<keyof MemberOptions>;

function definedOf(input: MemberOptionsInput, keys: readonly (keyof MemberOptionsInput)[]): Partial<MemberOptions> {
  return Object.fromEntries(keys.filter((k) => input[k] !== undefined).map((k) => [k, input[k]])) as Partial<MemberOptions>;
}
