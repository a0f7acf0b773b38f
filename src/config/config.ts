/**
 * Server configuration: etcd's flags (same names and defaults where etcd has the flag) plus k3s's
 * `--cluster-init`, `--server`, `--token`. Read from argv, `ETCETERA_*` environment variables and a YAML
 * `--config-file`, with precedence flags > environment > file > defaults; every bad option is refused with
 * a message naming it.
 *
 *   const r = parseConfig({ argv: process.argv.slice(3), env: process.env });
 *   if (r.kind === 'help') console.log(r.text); else start({ ...r.config, logger });
 *
 * `ServerConfig` is MemberOptions (what an embedding host passes) without the logger, plus logging and
 * provenance fields, so the CLI hands it over as is.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseCron } from './cron.js';
import { s3OptionsOf } from './s3-options.js';
import { quotaBackendBytesMax } from '../base/index.js';
import { type LogLevel } from './log.js';
import { memberUrlKeys, type MemberOptions, type MemberUrlKey, type TlsFiles } from './member-options.js';
import { helpText } from './config-options.js';
import { ConfigError, type RawOptions, readArgv, readEnv, readYaml } from './config-sources.js';
import { Typed } from './config-typed.js';
import { buildAuth, buildAutoTls, buildGrpcLimits, buildLogOutputs, buildTlsPolicy, crlFileOf, etcdFlagNotices } from './config-etcd.js';
import {
  checkHttpsHasTls,
  checkListenUrls,
  checkRetention,
  checkSelfInCluster,
  isUnspecifiedHost,
  parseInitialCluster,
  parseUrlList,
  tlsFileSet,
} from './config-validate.js';

export { ConfigError } from './config-sources.js';
export { helpText } from './config-options.js';

export interface ServerConfig extends Omit<MemberOptions, 'logger'> {
  logLevel: LogLevel;
  /** etcd --log-outputs: 'stderr', 'stdout' or file paths. */
  logOutputs: string[];
  /** The YAML file the options were read from, if any. */
  configFile?: string;
  /** k3s's --cluster-reset: reset like --force-new-cluster, then exit once it is in effect. */
  clusterReset: boolean;
  /** With clusterReset: a snapshot file to restore first. */
  clusterResetRestorePath?: string;
  /** Derived from autoCompaction: 0 when off or in the other mode. */
  autoCompactionRetentionMs: number;
  autoCompactionRetentionRevisions: number;
}

export type ParseResult =
  | { kind: 'help'; text: string }
  | { kind: 'version' }
  | { kind: 'config'; config: ServerConfig; warnings: string[] };

export interface ParseInput {
  argv: readonly string[];
  env?: Readonly<Record<string, string | undefined>>;
  /** Reads the config file (default: fs.readFileSync as UTF-8). */
  readFile?: (path: string) => string;
}

/** Etcd's upper bound on --election-timeout. */
export const electionTimeoutMsMax = 50_000;

export function parseConfig(input: ParseInput): ParseResult {
  const fromArgv = readArgv(input.argv);
  if (fromArgv.help) return { kind: 'help', text: helpText() };
  if (fromArgv.version) return { kind: 'version' };
  const fromEnv = readEnv(input.env ?? {});
  const warnings = [...fromArgv.warnings, ...fromEnv.warnings];
  const configFile = (fromArgv.options.get('config-file') ?? fromEnv.options.get('config-file'))?.value;
  let fromFile: RawOptions = new Map();
  if (configFile !== undefined && configFile !== '') {
    let text: string;
    try {
      text = (input.readFile ?? ((p: string) => readFileSync(p, 'utf8')))(configFile);
    } catch (err) {
      throw new ConfigError(`cannot read --config-file ${configFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const read = readYaml(text, configFile);
    fromFile = read.options;
    warnings.push(...read.warnings);
  }
  // Precedence: later sources overwrite earlier ones.
  const merged: RawOptions = new Map([...fromFile, ...fromEnv.options, ...fromArgv.options]);
  const config = build(new Typed(merged), warnings, input.env ?? {});
  return { kind: 'config', config, warnings };
}

function build(o: Typed, warnings: string[], env: Readonly<Record<string, string | undefined>>): ServerConfig {
  const name = o.string('name');
  const dataDir = o.string('data-dir');
  if (name.trim() === '') throw new ConfigError('--name must not be empty');
  if (dataDir.trim() === '') throw new ConfigError('--data-dir must not be empty');
  warnings.push(...etcdFlagNotices(o));
  const timing = buildTiming(o);
  const urls = buildUrls(o);
  const tls = buildTls(o, urls, warnings);
  let quotaBackendBytes = o.uint('quota-backend-bytes');
  if (quotaBackendBytes > quotaBackendBytesMax) {
    warnings.push(`--quota-backend-bytes ${quotaBackendBytes} exceeds the maximum; using ${quotaBackendBytesMax}`);
    quotaBackendBytes = quotaBackendBytesMax;
  }
  const snapshotCount = o.uint('snapshot-count');
  if (snapshotCount < 1) throw new ConfigError('--snapshot-count must be at least 1');
  const mode = o.enumValue<'periodic' | 'revision'>('auto-compaction-mode');
  const retention = o.string('auto-compaction-retention');
  const { retentionMs, retentionRevisions } = checkRetention(mode, retention);
  const { bootstrap, token } = buildBootstrap(o, name, urls.initialAdvertisePeerUrls);
  const configFile = o.string('config-file');
  const walDir = o.string('wal-dir');
  const logLevel = o.enumValue<LogLevel | 'panic'>('log-level');
  o.enumValue('logger'); // only etcd's zap, which is what we write
  if (o.bool('unsafe-no-fsync')) warnings.push('--unsafe-no-fsync: the log is never synced; a crash or power loss loses acknowledged writes');
  return {
    name,
    dataDir,
    ...(walDir !== '' ? { walDir } : {}),
    ...urls,
    ...timing,
    snapshotCount,
    quotaBackendBytes,
    ...(retentionMs > 0 || retentionRevisions > 0 ? { autoCompaction: { mode, retention } } : {}),
    autoCompactionRetentionMs: retentionMs,
    autoCompactionRetentionRevisions: retentionRevisions,
    storageProfile: o.enumValue('storage-profile'),
    storageEnduranceTbw: o.positiveNumber('storage-endurance-tbw'),
    storageLifeWarningYears: o.positiveNumber('storage-life-warning-years'),
    bootstrap,
    ...(token !== undefined ? { token } : {}),
    ...tls,
    preVote: o.bool('pre-vote'),
    unsafeNoFsync: o.bool('unsafe-no-fsync'),
    grpcLimits: buildGrpcLimits(o, warnings),
    auth: buildAuth(o),
    enableGrpcGateway: o.bool('enable-grpc-gateway'),
    ...grpcServerOf(o),
    initialCorruptCheck: o.bool('experimental-initial-corrupt-check'),
    watchProgressNotifyIntervalMs: watchProgressOf(o),
    // etcd's panic level logs only panics and fatals; we have no panic, so it is fatal.
    logLevel: logLevel === 'panic' ? 'fatal' : logLevel,
    logOutputs: buildLogOutputs(o),
    ...buildRecovery(o, dataDir),
    ...buildS3(o, env, warnings),
    ...(configFile !== '' ? { configFile } : {}),
  };
}

function withChecks<T extends object>(files: T | undefined, crlFile: string | undefined, allowed: Pick<TlsFiles, 'allowedCns' | 'allowedHostnames'>): T | undefined {
  return files === undefined ? undefined : { ...files, ...(crlFile !== undefined ? { crlFile } : {}), ...allowed };
}

/** Allowed CNs and hostnames only mean something when client certificates are required. */
function allowedOf(o: Typed, cnFlag: string, hostFlag: string, authFlag: string, warnings: string[]): Pick<TlsFiles, 'allowedCns' | 'allowedHostnames'> {
  const allowedCns = o.list(cnFlag);
  const allowedHostnames = o.list(hostFlag);
  if (allowedCns.length + allowedHostnames.length === 0) return {};
  if (!o.bool(authFlag)) warnings.push(`--${allowedCns.length > 0 ? cnFlag : hostFlag} has no effect without --${authFlag}`);
  return { ...(allowedCns.length > 0 ? { allowedCns } : {}), ...(allowedHostnames.length > 0 ? { allowedHostnames } : {}) };
}

/** --grpc-server; empty leaves the choice to the server's default (ETCETERA_GRPC_SERVER, else frames). */
function grpcServerOf(o: Typed): Pick<ServerConfig, 'grpcServer'> {
  const kind = o.enumValue<'' | 'grpc-js' | 'h2' | 'frames'>('grpc-server');
  return kind === '' ? {} : { grpcServer: kind };
}

function watchProgressOf(o: Typed): number {
  const ms = o.durationMs('experimental-watch-progress-notify-interval');
  // etcd's check, word for word.
  if (ms <= 0) throw new ConfigError('--experimental-watch-progress-notify-interval must be >0');
  return ms;
}

type TlsConfig = Pick<ServerConfig, 'clientTls' | 'peerTls' | 'autoTls' | 'tlsPolicy'>;

/** Certificate files, auto TLS, CRLs and the TLS policy; an https URL needs certificates or auto TLS. */
function buildTls(o: Typed, urls: UrlOptions, warnings: string[]): TlsConfig {
  const clientFiles = tlsFileSet('', {
    cert: o.string('cert-file'), key: o.string('key-file'), ca: o.string('trusted-ca-file'), clientCertAuth: o.bool('client-cert-auth'),
  });
  const peerFiles = tlsFileSet('peer-', {
    cert: o.string('peer-cert-file'), key: o.string('peer-key-file'), ca: o.string('peer-trusted-ca-file'), clientCertAuth: o.bool('peer-client-cert-auth'),
  });
  const autoTls = buildAutoTls(o, clientFiles !== undefined, peerFiles !== undefined, warnings);
  const hasClientTls = clientFiles !== undefined || autoTls?.client === true;
  const hasPeerTls = peerFiles !== undefined || autoTls?.peer === true;
  const clientCerts = '--cert-file, --key-file';
  checkHttpsHasTls(urls.listenClientUrls, 'listen-client-urls', hasClientTls, clientCerts);
  checkHttpsHasTls(urls.listenClientHttpUrls ?? [], 'listen-client-http-urls', hasClientTls, clientCerts);
  checkHttpsHasTls(urls.listenMetricsUrls, 'listen-metrics-urls', hasClientTls, clientCerts);
  checkHttpsHasTls(urls.listenPeerUrls, 'listen-peer-urls', hasPeerTls, '--peer-cert-file, --peer-key-file');
  const clientCrl = crlFileOf(o, 'client-crl-file', hasClientTls);
  const peerCrl = crlFileOf(o, 'peer-crl-file', hasPeerTls);
  const clientTls = withChecks(clientFiles, clientCrl, allowedOf(o, 'client-cert-allowed-cn', 'client-cert-allowed-hostname', 'client-cert-auth', warnings));
  const peerTls = withChecks(peerFiles, peerCrl, allowedOf(o, 'peer-cert-allowed-cn', 'peer-cert-allowed-hostname', 'peer-client-cert-auth', warnings));
  return {
    ...(clientTls !== undefined ? { clientTls } : {}),
    ...(peerTls !== undefined ? { peerTls } : {}),
    ...(autoTls !== undefined ? { autoTls: { ...autoTls, ...(clientCrl !== undefined ? { clientCrlFile: clientCrl } : {}), ...(peerCrl !== undefined ? { peerCrlFile: peerCrl } : {}) } } : {}),
    tlsPolicy: buildTlsPolicy(o),
  };
}

function buildTiming(o: Typed): { heartbeatIntervalMs: number; electionTimeoutMs: number } {
  const heartbeatIntervalMs = o.uint('heartbeat-interval');
  const electionTimeoutMs = o.uint('election-timeout');
  if (heartbeatIntervalMs < 1) throw new ConfigError('--heartbeat-interval must be at least 1 ms');
  // etcd's messages, word for word.
  if (5 * heartbeatIntervalMs > electionTimeoutMs) {
    throw new ConfigError(`--election-timeout[${electionTimeoutMs}ms] should be at least as 5 times as --heartbeat-interval[${heartbeatIntervalMs}ms]`);
  }
  if (electionTimeoutMs > electionTimeoutMsMax) {
    throw new ConfigError(`--election-timeout[${electionTimeoutMs}ms] is too long, and should be set less than ${electionTimeoutMsMax}ms`);
  }
  return { heartbeatIntervalMs, electionTimeoutMs };
}

type UrlOptions = Pick<
  ServerConfig,
  'listenClientUrls' | 'advertiseClientUrls' | 'listenPeerUrls' | 'initialAdvertisePeerUrls' | 'listenMetricsUrls' | 'listenClientHttpUrls' | 'defaultedUrls'
>;

/** The flag behind each URL option; advertised URLs default to the listen URLs, so those count too. */
const urlFlags: Record<MemberUrlKey, string[]> = {
  listenClientUrls: ['listen-client-urls'],
  advertiseClientUrls: ['advertise-client-urls', 'listen-client-urls'],
  listenPeerUrls: ['listen-peer-urls'],
  initialAdvertisePeerUrls: ['initial-advertise-peer-urls', 'listen-peer-urls'],
  listenMetricsUrls: ['listen-metrics-urls'],
};

function buildUrls(o: Typed): UrlOptions {
  const listenClientUrls = o.urls('listen-client-urls');
  const listenPeerUrls = o.urls('listen-peer-urls');
  const listenMetricsUrls = o.urls('listen-metrics-urls');
  if (listenClientUrls.length === 0) throw new ConfigError('--listen-client-urls must name at least one URL');
  if (listenPeerUrls.length === 0) throw new ConfigError('--listen-peer-urls must name at least one URL');
  checkListenUrls(listenClientUrls, 'listen-client-urls');
  checkListenUrls(listenPeerUrls, 'listen-peer-urls');
  checkListenUrls(listenMetricsUrls, 'listen-metrics-urls');
  const listenClientHttpUrls = o.urls('listen-client-http-urls');
  checkListenUrls(listenClientHttpUrls, 'listen-client-http-urls');
  // Advertised URLs default to the listen URLs, which only works when those name a reachable address.
  const advertiseClientUrls = o.isSet('advertise-client-urls') ? o.urls('advertise-client-urls') : listenClientUrls;
  if (advertiseClientUrls.length === 0 || advertiseClientUrls.some(isUnspecifiedHost)) {
    throw new ConfigError('--advertise-client-urls is required when --listen-client-urls is set to an unspecified address (0.0.0.0 or ::)');
  }
  const initialAdvertisePeerUrls = o.isSet('initial-advertise-peer-urls') ? o.urls('initial-advertise-peer-urls') : listenPeerUrls;
  if (initialAdvertisePeerUrls.length === 0 || initialAdvertisePeerUrls.some(isUnspecifiedHost)) {
    throw new ConfigError('--initial-advertise-peer-urls is required when --listen-peer-urls is set to an unspecified address (0.0.0.0 or ::)');
  }
  const defaultedUrls = memberUrlKeys.filter((k) => !urlFlags[k].some((flag) => o.isSet(flag)));
  return { listenClientUrls, advertiseClientUrls, listenPeerUrls, initialAdvertisePeerUrls, listenMetricsUrls, listenClientHttpUrls, defaultedUrls };
}

/**
 * k3s's `--cluster-init` / `--server`, or etcd's static `--initial-cluster`. With none of them, a new
 * single-member cluster, which is what etcd's defaults amount to.
 */
function buildBootstrap(o: Typed, name: string, advertisePeerUrls: string[]): Pick<ServerConfig, 'bootstrap' | 'token'> {
  const clusterInit = o.bool('cluster-init');
  const server = o.string('server');
  const tokenText = o.string('token');
  const token = tokenText === '' ? undefined : tokenText;
  const staticFlags = ['initial-cluster', 'initial-cluster-state', 'initial-cluster-witnesses'].filter((f) => o.isSet(f));
  if (clusterInit && server !== '') throw new ConfigError('--cluster-init and --server cannot be used together');
  if ((clusterInit || server !== '') && staticFlags.length > 0) {
    throw new ConfigError(`--${staticFlags[0]} cannot be combined with ${clusterInit ? '--cluster-init' : '--server'} (choose k3s-style or etcd static bootstrap)`);
  }
  if (o.isSet('token') && token === undefined) throw new ConfigError('--token must not be empty');
  if (server !== '') {
    if (token === undefined) throw new ConfigError('--server needs --token (the join token of the cluster to join)');
    return { bootstrap: { kind: 'join', serverUrl: parseUrlList(server, 'server')[0] ?? '' }, token };
  }
  if (clusterInit || staticFlags.length === 0) return { bootstrap: { kind: 'init' }, token };
  const clusterText = o.isSet('initial-cluster') ? o.string('initial-cluster') : advertisePeerUrls.map((u) => `${name}=${u}`).join(',');
  const initialCluster = parseInitialCluster(clusterText);
  checkSelfInCluster(initialCluster, name, advertisePeerUrls);
  const clusterToken = o.string('initial-cluster-token');
  if (clusterToken === '') throw new ConfigError('--initial-cluster-token must not be empty');
  const state = o.enumValue<'new' | 'existing'>('initial-cluster-state');
  const witnesses = initialWitnesses(o.string('initial-cluster-witnesses'), initialCluster);
  return { bootstrap: { kind: 'static', initialCluster, state, clusterToken, ...(witnesses.length > 0 ? { witnesses } : {}) }, token };
}

/** --initial-cluster-witnesses: names of --initial-cluster members; at least one member must hold data. */
function initialWitnesses(text: string, initialCluster: Array<{ name: string }>): string[] {
  const names = [...new Set(text.split(',').map((n) => n.trim()).filter((n) => n !== ''))];
  for (const n of names) {
    if (!initialCluster.some((m) => m.name === n)) throw new ConfigError(`--initial-cluster-witnesses: ${JSON.stringify(n)} is not in --initial-cluster`);
  }
  if (names.length >= initialCluster.length) throw new ConfigError('--initial-cluster-witnesses: at least one member must hold data');
  return names;
}

/** --force-new-cluster, k3s's --cluster-reset and scheduled snapshots (src/backup/cluster-reset.ts, src/backup/). */
function buildRecovery(o: Typed, dataDir: string): Pick<ServerConfig, 'forceNewCluster' | 'clusterReset' | 'clusterResetRestorePath' | 'scheduledSnapshots'> {
  const clusterReset = o.bool('cluster-reset');
  const restorePath = o.string('cluster-reset-restore-path');
  // k3s's wording.
  if (restorePath !== '' && !clusterReset) throw new ConfigError('invalid flag use; --cluster-reset required with --cluster-reset-restore-path');
  const schedule = o.string('snapshot-schedule').trim();
  if (schedule !== '') {
    try {
      parseCron(schedule);
    } catch (error) {
      throw new ConfigError(`invalid --snapshot-schedule: ${(error as Error).message}`);
    }
  }
  const retention = o.uint('snapshot-retention');
  if (retention < 1) throw new ConfigError('--snapshot-retention must be at least 1');
  const dir = o.string('snapshot-dir');
  return {
    ...(o.bool('force-new-cluster') || clusterReset ? { forceNewCluster: true } : {}),
    clusterReset,
    ...(restorePath !== '' ? { clusterResetRestorePath: restorePath } : {}),
    ...(schedule !== ''
      ? { scheduledSnapshots: { schedule, retention, dir: dir !== '' ? dir : join(dataDir, 'snapshots'), compress: o.bool('snapshot-compress') } }
      : {}),
  };
}

/** k3s's --etcd-s3 options (config/s3-options.ts): refused whole when on and incomplete. */
function buildS3(o: Typed, env: Readonly<Record<string, string | undefined>>, warnings: string[]): Pick<ServerConfig, 'etcdS3'> {
  const given = new Set(o.given());
  try {
    const s3 = s3OptionsOf((flag) => (given.has(flag) ? o.string(flag) : undefined), env);
    if (s3 !== undefined && o.string('snapshot-schedule').trim() === '') {
      warnings.push('--etcd-s3 with scheduled snapshots off (--snapshot-schedule \'\'): the member uploads nothing; the bucket serves restores and `snapshot save --etcd-s3`');
    }
    return s3 !== undefined ? { etcdS3: s3 } : {};
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}
