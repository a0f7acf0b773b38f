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
import { quotaBackendBytesMax } from '../base/index.js';
import { type LogLevel } from './log.js';
import type { MemberOptions } from './member-options.js';
import { type OptionSpec, helpText, optionSpecs } from './config-options.js';
import { ConfigError, type RawOptions, type RawValue, readArgv, readEnv, readYaml } from './config-sources.js';
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
  /** The YAML file the options were read from, if any. */
  configFile?: string;
  /** Derived from autoCompaction: 0 when off or in the other mode. */
  autoCompactionRetentionMs: number;
  autoCompactionRetentionRevisions: number;
}

export type ParseResult =
  | { kind: 'help'; text: string }
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
  const config = build(new Typed(merged), warnings);
  return { kind: 'config', config, warnings };
}

/** Typed access to the merged options, with defaults from the table and errors naming the source. */
class Typed {
  #raw: RawOptions;
  constructor(raw: RawOptions) {
    this.#raw = raw;
  }
  isSet(flag: string): boolean {
    return this.#raw.has(flag);
  }
  #get(flag: string): { spec: OptionSpec; raw: RawValue } {
    const spec = optionSpecs.get(flag);
    if (spec === undefined) throw new Error(`no option ${flag}`);
    return { spec, raw: this.#raw.get(flag) ?? { value: spec.default, where: `default of --${flag}` } };
  }
  string(flag: string): string {
    return this.#get(flag).raw.value;
  }
  bool(flag: string): boolean {
    const { raw } = this.#get(flag);
    const v = raw.value.toLowerCase();
    if (['true', '1', 't', 'yes'].includes(v)) return true;
    if (['false', '0', 'f', 'no', ''].includes(v)) return false;
    throw new ConfigError(`invalid boolean value ${JSON.stringify(raw.value)} for --${flag} (from ${raw.where})`);
  }
  uint(flag: string): number {
    const { raw } = this.#get(flag);
    const text = raw.value.trim();
    const n = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(n)) {
      throw new ConfigError(`invalid value ${JSON.stringify(raw.value)} for --${flag} (from ${raw.where}): expected a non-negative integer`);
    }
    return n;
  }
  enumValue<T extends string>(flag: string): T {
    const { spec, raw } = this.#get(flag);
    if (!(spec.values ?? []).includes(raw.value)) {
      throw new ConfigError(`invalid value ${JSON.stringify(raw.value)} for --${flag} (from ${raw.where}): must be one of ${(spec.values ?? []).join(', ')}`);
    }
    return raw.value as T;
  }
  urls(flag: string): string[] {
    return parseUrlList(this.string(flag), flag);
  }
}

function build(o: Typed, warnings: string[]): ServerConfig {
  const name = o.string('name');
  const dataDir = o.string('data-dir');
  if (name.trim() === '') throw new ConfigError('--name must not be empty');
  if (dataDir.trim() === '') throw new ConfigError('--data-dir must not be empty');
  const timing = buildTiming(o);
  const urls = buildUrls(o);
  const clientTls = tlsFileSet('', {
    cert: o.string('cert-file'), key: o.string('key-file'), ca: o.string('trusted-ca-file'), clientCertAuth: o.bool('client-cert-auth'),
  });
  const peerTls = tlsFileSet('peer-', {
    cert: o.string('peer-cert-file'), key: o.string('peer-key-file'), ca: o.string('peer-trusted-ca-file'), clientCertAuth: o.bool('peer-client-cert-auth'),
  });
  const clientCerts = '--cert-file, --key-file';
  checkHttpsHasTls(urls.listenClientUrls, 'listen-client-urls', clientTls, clientCerts);
  checkHttpsHasTls(urls.listenMetricsUrls, 'listen-metrics-urls', clientTls, clientCerts);
  checkHttpsHasTls(urls.listenPeerUrls, 'listen-peer-urls', peerTls, '--peer-cert-file, --peer-key-file');
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
  return {
    name,
    dataDir,
    ...urls,
    ...timing,
    snapshotCount,
    quotaBackendBytes,
    ...(retentionMs > 0 || retentionRevisions > 0 ? { autoCompaction: { mode, retention } } : {}),
    autoCompactionRetentionMs: retentionMs,
    autoCompactionRetentionRevisions: retentionRevisions,
    storageProfile: o.enumValue('storage-profile'),
    bootstrap,
    ...(token !== undefined ? { token } : {}),
    ...(clientTls !== undefined ? { clientTls } : {}),
    ...(peerTls !== undefined ? { peerTls } : {}),
    logLevel: o.enumValue<LogLevel>('log-level'),
    ...(configFile !== '' ? { configFile } : {}),
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
  'listenClientUrls' | 'advertiseClientUrls' | 'listenPeerUrls' | 'initialAdvertisePeerUrls' | 'listenMetricsUrls'
>;

function buildUrls(o: Typed): UrlOptions {
  const listenClientUrls = o.urls('listen-client-urls');
  const listenPeerUrls = o.urls('listen-peer-urls');
  const listenMetricsUrls = o.urls('listen-metrics-urls');
  if (listenClientUrls.length === 0) throw new ConfigError('--listen-client-urls must name at least one URL');
  if (listenPeerUrls.length === 0) throw new ConfigError('--listen-peer-urls must name at least one URL');
  checkListenUrls(listenClientUrls, 'listen-client-urls');
  checkListenUrls(listenPeerUrls, 'listen-peer-urls');
  checkListenUrls(listenMetricsUrls, 'listen-metrics-urls');
  // Advertised URLs default to the listen URLs, which only works when those name a reachable address.
  const advertiseClientUrls = o.isSet('advertise-client-urls') ? o.urls('advertise-client-urls') : listenClientUrls;
  if (advertiseClientUrls.length === 0 || advertiseClientUrls.some(isUnspecifiedHost)) {
    throw new ConfigError('--advertise-client-urls is required when --listen-client-urls is set to an unspecified address (0.0.0.0 or ::)');
  }
  const initialAdvertisePeerUrls = o.isSet('initial-advertise-peer-urls') ? o.urls('initial-advertise-peer-urls') : listenPeerUrls;
  if (initialAdvertisePeerUrls.length === 0 || initialAdvertisePeerUrls.some(isUnspecifiedHost)) {
    throw new ConfigError('--initial-advertise-peer-urls is required when --listen-peer-urls is set to an unspecified address (0.0.0.0 or ::)');
  }
  return { listenClientUrls, advertiseClientUrls, listenPeerUrls, initialAdvertisePeerUrls, listenMetricsUrls };
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
  const staticFlags = ['initial-cluster', 'initial-cluster-state'].filter((f) => o.isSet(f));
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
  return { bootstrap: { kind: 'static', initialCluster, state, clusterToken }, token };
}
