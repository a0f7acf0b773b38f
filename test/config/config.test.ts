import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, type ServerConfig, parseConfig } from '../../src/config/config.js';
import { optionSpecs, envName } from '../../src/config/config-options.js';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const cert = file('c.pem', 'cert');
const key = file('k.pem', 'key');
const ca = file('ca.pem', 'ca');

function config(argv: string[], env: Record<string, string> = {}): ServerConfig {
  const r = parseConfig({ argv, env });
  if (r.kind !== 'config') throw new Error('expected a config');
  return r.config;
}

describe('server configuration', () => {
  it('has etcd defaults and starts a single-member cluster', () => {
    const c = config([]);
    expect(c).toMatchObject({
      name: 'default', dataDir: './etcetera-data',
      listenClientUrls: ['http://127.0.0.1:2379'], advertiseClientUrls: ['http://127.0.0.1:2379'],
      listenPeerUrls: ['http://127.0.0.1:2380'], initialAdvertisePeerUrls: ['http://127.0.0.1:2380'],
      listenMetricsUrls: [], heartbeatIntervalMs: 100, electionTimeoutMs: 1000, snapshotCount: 10_000,
      quotaBackendBytes: 0, storageProfile: 'auto', bootstrap: { kind: 'init' }, logLevel: 'info',
      autoCompactionRetentionMs: 0, autoCompactionRetentionRevisions: 0,
    });
    expect(c.autoCompaction).toBeUndefined();
    expect(c.token).toBeUndefined();
    expect(c.clientTls).toBeUndefined();
  });

  it('parses --flag value, --flag=value, single dashes, booleans and repeated flags (last wins)', () => {
    const c = config(['--name', 'n1', '-data-dir=/tmp/x', '--heartbeat-interval=50', '--election-timeout', '500',
      '--cluster-init', '--token', 't0k', '--log-level', 'debug', '--name=n2', '--listen-metrics-urls', 'http://127.0.0.1:9000,http://[::1]:9001']);
    expect(c).toMatchObject({ name: 'n2', dataDir: '/tmp/x', heartbeatIntervalMs: 50, electionTimeoutMs: 500, bootstrap: { kind: 'init' }, token: 't0k', logLevel: 'debug' });
    expect(c.listenMetricsUrls).toEqual(['http://127.0.0.1:9000', 'http://[::1]:9001']);
    expect(config(['--cluster-init=false', '--initial-cluster-state', 'new']).bootstrap.kind).toBe('static');
    expect(config(['--cluster-init', '--initial-cluster-state=existing'].slice(1)).bootstrap.kind).toBe('static');
  });

  it('applies precedence flags > environment > config file > defaults', () => {
    const yaml = file('prec.yaml', 'name: from-file\ndata-dir: /file\nsnapshot-count: 7\nheartbeat-interval: 10\n');
    const env = { ETCETERA_CONFIG_FILE: yaml, ETCETERA_DATA_DIR: '/env', ETCETERA_SNAPSHOT_COUNT: '8' };
    const c = config(['--snapshot-count', '9'], env);
    expect(c).toMatchObject({ name: 'from-file', dataDir: '/env', snapshotCount: 9, heartbeatIntervalMs: 10, configFile: yaml });
    expect(config([], env).snapshotCount).toBe(8);
  });

  it('reads etcd-style YAML: flag names as keys, lists, nested transport security, no-effect etcd keys with a notice', () => {
    const yaml = file('etcd.yaml', [
      'name: infra0', 'data-dir: /var/lib/etcd',
      'listen-peer-urls: http://10.0.1.10:2380', 'initial-advertise-peer-urls: http://10.0.1.10:2380',
      'listen-client-urls: [ "http://10.0.1.10:2379", "http://127.0.0.1:2379" ]', 'advertise-client-urls: http://10.0.1.10:2379',
      'initial-cluster: infra0=http://10.0.1.10:2380,infra1=http://10.0.1.11:2380,infra1=http://10.0.2.11:2380',
      'initial-cluster-state: existing', 'initial-cluster-token: tok', 'heartbeat-interval: 200', 'election-timeout: 2000',
      'auto-compaction-mode: revision', 'auto-compaction-retention: "1000"', 'quota-backend-bytes: 1073741824',
      'client-transport-security:', `  cert-file: ${cert}`, `  key-file: ${key}`, `  trusted-ca-file: ${ca}`, '  client-cert-auth: true', '  auto-tls: false',
      'peer-transport-security:', `  cert-file: ${cert}`, `  key-file: ${key}`,
      'enable-v2: false', 'logger: zap', 'wal-dir:',
    ].join('\n').replace('wal-dir:', 'max-wals: 5'));
    const r = parseConfig({ argv: ['--config-file', yaml], env: {} });
    if (r.kind !== 'config') throw new Error('expected config');
    expect(r.config).toMatchObject({
      name: 'infra0', listenClientUrls: ['http://10.0.1.10:2379', 'http://127.0.0.1:2379'], heartbeatIntervalMs: 200,
      quotaBackendBytes: 1073741824, autoCompaction: { mode: 'revision', retention: '1000' }, autoCompactionRetentionRevisions: 1000,
      bootstrap: { kind: 'static', state: 'existing', clusterToken: 'tok', initialCluster: [
        { name: 'infra0', peerUrls: ['http://10.0.1.10:2380'] },
        { name: 'infra1', peerUrls: ['http://10.0.1.11:2380', 'http://10.0.2.11:2380'] },
      ] },
      clientTls: { certFile: cert, keyFile: key, trustedCaFile: ca, clientCertAuth: true },
      peerTls: { certFile: cert, keyFile: key },
    });
    expect(r.warnings).toEqual([
      expect.stringMatching(/^--max-wals: accepted for etcd compatibility; WAL segments/),
      expect.stringMatching(/^--enable-v2: accepted for etcd compatibility; the v2 API is not served/),
    ]);
  });

  it('reads every option from its ETCETERA_* variable and warns about unknown ones', () => {
    expect(envName('peer-client-cert-auth')).toBe('ETCETERA_PEER_CLIENT_CERT_AUTH');
    const r = parseConfig({ argv: [], env: { ETCETERA_NAME: 'e', ETCETERA_SERVER: 'http://10.0.0.1:2380', ETCETERA_TOKEN: 'T', ETCETERA_BOGUS: 'x', PATH: '/bin' } });
    if (r.kind !== 'config') throw new Error('expected config');
    expect(r.config).toMatchObject({ name: 'e', bootstrap: { kind: 'join', serverUrl: 'http://10.0.0.1:2380' }, token: 'T' });
    expect(r.warnings).toEqual(['unrecognized environment variable ETCETERA_BOGUS=x']);
  });

  it('derives periodic retention, the default initial cluster and advertised URLs', () => {
    expect(config(['--auto-compaction-retention', '1']).autoCompactionRetentionMs).toBe(3_600_000);
    expect(config(['--auto-compaction-retention', '5m']).autoCompactionRetentionMs).toBe(300_000);
    expect(config(['--auto-compaction-retention', '1h30m']).autoCompactionRetentionMs).toBe(5_400_000);
    const c = config(['--name', 'a', '--listen-peer-urls', 'http://127.0.0.1:3380', '--initial-cluster-state', 'new']);
    expect(c.bootstrap).toEqual({ kind: 'static', state: 'new', clusterToken: 'etcd-cluster', initialCluster: [{ name: 'a', peerUrls: ['http://127.0.0.1:3380'] }] });
    const d = config(['--listen-client-urls', 'http://0.0.0.0:2379', '--advertise-client-urls', 'http://10.1.1.1:2379']);
    expect(d.advertiseClientUrls).toEqual(['http://10.1.1.1:2379']);
  });

  it('--initial-cluster-witnesses names witnesses among the initial members, never all of them', () => {
    const cluster = ['--name', 'a', '--initial-advertise-peer-urls', 'http://127.0.0.1:3380', '--initial-cluster', 'a=http://127.0.0.1:3380,w=http://127.0.0.1:3381'];
    expect(config([...cluster, '--initial-cluster-witnesses', 'w']).bootstrap).toMatchObject({ kind: 'static', witnesses: ['w'] });
    expect(() => config([...cluster, '--initial-cluster-witnesses', 'x'])).toThrow('--initial-cluster-witnesses: "x" is not in --initial-cluster');
    expect(() => config([...cluster, '--initial-cluster-witnesses', 'a,w'])).toThrow('--initial-cluster-witnesses: at least one member must hold data');
    expect(() => config(['--server', 'http://10.0.0.1:2380', '--token', 't', '--initial-cluster-witnesses', 'w'])).toThrow(/cannot be combined with --server/);
  });

  it('clamps a quota above etcd\'s maximum with a warning', () => {
    const r = parseConfig({ argv: ['--quota-backend-bytes', String(16 * 1024 ** 3)] });
    if (r.kind !== 'config') throw new Error('expected config');
    expect(r.config.quotaBackendBytes).toBe(8 * 1024 ** 3);
    expect(r.warnings[0]).toMatch(/exceeds the maximum/);
  });

  it('prints help listing every flag', () => {
    const r = parseConfig({ argv: ['--name', 'x', '--help'] });
    expect(r.kind).toBe('help');
    if (r.kind !== 'help') return;
    for (const flag of optionSpecs.keys()) expect(r.text).toContain(`--${flag}`);
    expect(parseConfig({ argv: ['-h'] }).kind).toBe('help');
  });

  const bad: [string, string[], Record<string, string>, RegExp][] = [
    ['an unknown flag', ['--bogus', '1'], {}, /unknown flag --bogus/],
    ['a positional argument', ['extra'], {}, /unexpected argument "extra"/],
    ['a flag without its value', ['--name'], {}, /flag needs an argument: --name/],
    ['a non-numeric interval', ['--heartbeat-interval', 'abc'], {}, /invalid value "abc" for --heartbeat-interval \(from flag --heartbeat-interval\): expected a non-negative integer/],
    ['a negative number', ['--snapshot-count=-5'], {}, /expected a non-negative integer/],
    ['a zero snapshot count', ['--snapshot-count=0'], {}, /--snapshot-count must be at least 1/],
    ['a bad boolean', ['--client-cert-auth=maybe'], {}, /invalid boolean value "maybe" for --client-cert-auth/],
    ['a bad boolean in env', [], { ETCETERA_CLUSTER_INIT: 'yes please' }, /from environment ETCETERA_CLUSTER_INIT/],
    ['election < 5 heartbeats', ['--heartbeat-interval', '100', '--election-timeout', '400'], {}, /^--election-timeout\[400ms\] should be at least as 5 times as --heartbeat-interval\[100ms\]$/],
    ['election too long', ['--election-timeout', '60000'], {}, /^--election-timeout\[60000ms\] is too long, and should be set less than 50000ms$/],
    ['a zero heartbeat', ['--heartbeat-interval', '0'], {}, /--heartbeat-interval must be at least 1 ms/],
    ['a bad URL scheme', ['--listen-peer-urls', 'unix://x:1'], {}, /--listen-peer-urls: URL scheme must be http or https/],
    ['a URL without port', ['--listen-client-urls', 'http://127.0.0.1'], {}, /must include a port/],
    ['a URL with a path', ['--advertise-client-urls', 'http://a:1/x'], {}, /scheme:\/\/host:port only/],
    ['a non-URL', ['--listen-client-urls', 'foo'], {}, /invalid value "foo" for flag --listen-client-urls: not a URL/],
    ['a hostname to bind', ['--listen-client-urls', 'http://foo:2379'], {}, /expected IP in URL for binding \(http:\/\/foo:2379\)/],
    ['an unspecified listen address without advertise', ['--listen-client-urls', 'http://0.0.0.0:2379'], {}, /--advertise-client-urls is required/],
    ['an unspecified peer address without advertise', ['--listen-peer-urls', 'http://0.0.0.0:2380'], {}, /--initial-advertise-peer-urls is required/],
    ['a bad compaction mode', ['--auto-compaction-mode', 'foo'], {}, /invalid value "foo" for --auto-compaction-mode.*periodic, revision/],
    ['a bad periodic retention', ['--auto-compaction-retention', '5 fortnights'], {}, /for mode periodic/],
    ['a bad revision retention', ['--auto-compaction-mode', 'revision', '--auto-compaction-retention', '1h'], {}, /for mode revision/],
    ['a bad storage profile', ['--storage-profile', 'floppy'], {}, /must be one of auto, remeasure, ssd, emmc, sd/],
    ['a bad log level', ['--log-level', 'loud'], {}, /--log-level.*debug, info, warn, error, panic, fatal/],
    ['a bad cluster state', ['--initial-cluster-state', 'bogus'], {}, /invalid value "bogus" for --initial-cluster-state/],
    ['a malformed initial cluster', ['--initial-cluster', 'n1'], {}, /--initial-cluster: bad entry "n1"/],
    ['a duplicated peer URL', ['--initial-cluster', 'default=http://127.0.0.1:2380,b=http://127.0.0.1:2380'], {}, /given for both/],
    ['a name missing from the initial cluster', ['--name', 'n9', '--initial-cluster', 'n1=http://127.0.0.1:2380'], {}, /couldn't find local name "n9" in the initial cluster configuration/],
    ['advertised URLs not matching the initial cluster', ['--initial-cluster', 'default=http://10.0.0.1:2380'], {}, /--initial-cluster has default=http:\/\/10.0.0.1:2380 but missing from --initial-advertise-peer-urls/],
    ['an empty cluster token', ['--initial-cluster-state', 'new', '--initial-cluster-token', ''], {}, /--initial-cluster-token must not be empty/],
    ['cluster-init with server', ['--cluster-init', '--server', 'http://10.0.0.1:2380', '--token', 't'], {}, /cannot be used together/],
    ['server without token', ['--server', 'http://10.0.0.1:2380'], {}, /--server needs --token/],
    ['server with a bad URL', ['--server', '10.0.0.1', '--token', 't'], {}, /--server/],
    ['an empty token', ['--cluster-init', '--token='], {}, /--token must not be empty/],
    ['static flags with cluster-init', ['--cluster-init', '--initial-cluster', 'default=http://127.0.0.1:2380'], {}, /--initial-cluster cannot be combined with --cluster-init/],
    ['cert without key', ['--cert-file', cert], {}, /--cert-file and --key-file must be given together/],
    ['peer CA without cert', ['--peer-trusted-ca-file', ca], {}, /--peer-trusted-ca-file needs --peer-cert-file/],
    ['client-cert-auth without CA', ['--cert-file', cert, '--key-file', key, '--client-cert-auth'], {}, /--client-cert-auth needs --trusted-ca-file/],
    ['an unreadable key file', ['--peer-cert-file', cert, '--peer-key-file', join(dir, 'nope.pem')], {}, /cannot read --peer-key-file .*nope.pem: ENOENT/],
    ['https without certificate', ['--listen-client-urls', 'https://127.0.0.1:2379'], {}, /TLS key\/cert \(--cert-file, --key-file\) must be provided for --listen-client-urls/],
    ['https peer without certificate', ['--listen-peer-urls', 'https://127.0.0.1:2380'], {}, /--peer-cert-file, --peer-key-file\) must be provided/],
    ['a missing config file', ['--config-file', join(dir, 'missing.yaml')], {}, /cannot read --config-file .*missing.yaml: ENOENT/],
    ['invalid YAML', ['--config-file', file('bad.yaml', 'name: [unclosed')], {}, /invalid YAML in config file/],
    ['a YAML list at top level', ['--config-file', file('list.yaml', '- a\n- b\n')], {}, /must be a YAML mapping/],
    ['an unknown YAML key', ['--config-file', file('unk.yaml', 'nmae: x\n')], {}, /unknown key "nmae" in config file/],
    ['a YAML value of the wrong type', ['--config-file', file('type.yaml', 'name: { a: 1 }\n')], {}, /key name has a value of the wrong type/],
    ['a bad value in YAML names the file', ['--config-file', file('hb.yaml', 'heartbeat-interval: fast\n')], {}, /from config file .*hb.yaml \(key heartbeat-interval\)/],
  ];
  it.each(bad)('rejects %s', (_what, argv, env, message) => {
    let error: unknown;
    try {
      parseConfig({ argv, env });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(message);
  });
});
