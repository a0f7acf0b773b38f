/**
 * Every etcd 3.5 flag (server/etcdmain/config.go) and config-file key (server/embed/config.go) is accepted:
 * acted on, or accepted with a logged notice; discovery is refused with a clear error. Values of the
 * implemented ones reach the typed configuration.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, type ServerConfig, parseConfig } from '../../src/config/config.js';
import { optionSpecs } from '../../src/config/config-options.js';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-etcd-flags-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

/** etcd 3.5's flags, as registered in etcdmain/config.go newConfig (plus its ignored legacy flags). */
const etcd35Flags = `advertise-client-urls auth-token auth-token-ttl auto-compaction-mode auto-compaction-retention auto-tls
backend-batch-interval backend-batch-limit backend-bbolt-freelist-type bcrypt-cost cert-file cipher-suites client-cert-allowed-hostname
client-cert-auth client-cert-file client-crl-file client-key-file config-file cors data-dir discovery discovery-fallback discovery-proxy
discovery-srv discovery-srv-name election-timeout enable-grpc-gateway enable-log-rotation enable-pprof enable-v2
experimental-bootstrap-defrag-threshold-megabytes experimental-compact-hash-check-enabled experimental-compact-hash-check-time
experimental-compaction-batch-limit experimental-compaction-sleep-interval experimental-corrupt-check-time
experimental-distributed-tracing-address experimental-distributed-tracing-instance-id experimental-distributed-tracing-sampling-rate
experimental-distributed-tracing-service-name experimental-downgrade-check-time experimental-enable-distributed-tracing
experimental-enable-lease-checkpoint experimental-enable-lease-checkpoint-persist experimental-enable-v2v3
experimental-initial-corrupt-check experimental-memory-mlock experimental-peer-skip-client-san-verification
experimental-snapshot-catchup-entries experimental-stop-grpc-service-on-defrag experimental-txn-mode-write-with-shared-buffer
experimental-warning-apply-duration experimental-watch-progress-notify-interval force-new-cluster grpc-keepalive-interval
grpc-keepalive-min-time grpc-keepalive-timeout heartbeat-interval host-whitelist initial-advertise-peer-urls initial-cluster
initial-cluster-state initial-cluster-token initial-election-tick-advance key-file listen-client-http-urls listen-client-urls
listen-metrics-urls listen-peer-urls log-level log-outputs log-rotation-config-json logger max-concurrent-streams max-request-bytes
max-snapshots max-txn-ops max-wals metrics name peer-auto-tls peer-cert-allowed-cn peer-cert-allowed-hostname peer-cert-file
peer-client-cert-auth peer-client-cert-file peer-client-key-file peer-crl-file peer-key-file peer-trusted-ca-file pre-vote proxy
proxy-dial-timeout proxy-failure-wait proxy-read-timeout proxy-refresh-interval proxy-write-timeout quota-backend-bytes
raft-read-timeout raft-write-timeout self-signed-cert-validity snapshot-count socket-reuse-address socket-reuse-port
strict-reconfig-check tls-max-version tls-min-version trusted-ca-file unsafe-no-fsync v2-deprecation wal-dir
cluster-active-size cluster-remove-delay cluster-sync-interval config force max-result-buffer max-retry-attempts
peer-heartbeat-interval peer-election-timeout retry-interval snapshot v vv`.split(/\s+/);

function parse(argv: string[], env: Record<string, string> = {}): { config: ServerConfig; warnings: string[] } {
  const r = parseConfig({ argv, env });
  if (r.kind !== 'config') throw new Error('expected a config');
  return r;
}

describe('etcd 3.5 flags', () => {
  it('has a row for every etcd 3.5 flag (version is handled before the table)', () => {
    const missing = etcd35Flags.filter((f) => !optionSpecs.has(f));
    expect(missing).toEqual([]);
  });

  it('accepts each no-effect flag with its default value and logs its notice', () => {
    for (const spec of optionSpecs.values()) {
      if (spec.notice === undefined) continue;
      const arg = spec.kind === 'bool' ? `--${spec.flag}` : `--${spec.flag}=${spec.default}`;
      const r = parse([arg]);
      expect(r.warnings, spec.flag).toContain(`--${spec.flag}: ${spec.notice}`);
    }
  });

  it('refuses discovery bootstrap with a clear error, and allows it empty', () => {
    for (const flag of ['discovery', 'discovery-srv', 'discovery-proxy']) {
      expect(() => parse([`--${flag}`, 'https://discovery.etcd.io/abc'])).toThrow(new ConfigError(
        `--${flag}: discovery bootstrap is not supported; list the members with --initial-cluster, or join with --server and --token`,
      ));
      expect(() => parse([`--${flag}=`])).not.toThrow();
    }
  });

  it('types the implemented flags', () => {
    const { config } = parse([
      '--wal-dir', '/wal', '--listen-client-http-urls', 'http://127.0.0.1:2382', '--pre-vote=false', '--unsafe-no-fsync', '--force-new-cluster',
      '--max-txn-ops', '1024', '--max-request-bytes', '2097152', '--max-concurrent-streams', '100', '--grpc-keepalive-min-time', '1s',
      '--grpc-keepalive-interval', '1m30s', '--grpc-keepalive-timeout', '250ms', '--auth-token', 'jwt,sign-method=RS256', '--bcrypt-cost', '4',
      '--auth-token-ttl', '60', '--enable-grpc-gateway=false', '--experimental-initial-corrupt-check', '--log-outputs', 'stdout,/tmp/x.log',
      '--log-level', 'panic', '--cipher-suites', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305',
      '--tls-max-version', 'TLS1.3', '--auto-tls', '--peer-auto-tls', '--self-signed-cert-validity', '3',
    ]);
    expect(config).toMatchObject({
      walDir: '/wal', listenClientHttpUrls: ['http://127.0.0.1:2382'], preVote: false, unsafeNoFsync: true, forceNewCluster: true,
      grpcLimits: { txnOpsMax: 1024, requestBytesMax: 2097152, concurrentStreamsMax: 100, keepAliveMinTimeMs: 1000, keepAliveIntervalMs: 90_000, keepAliveTimeoutMs: 250 },
      auth: { token: 'jwt,sign-method=RS256', bcryptCost: 4, tokenTtlSeconds: 60 }, enableGrpcGateway: false, initialCorruptCheck: true,
      logOutputs: ['stdout', '/tmp/x.log'], logLevel: 'fatal',
      tlsPolicy: { ciphers: 'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305', minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' },
      autoTls: { client: true, peer: true, validityYears: 3 },
    });
    expect(parse([]).config).toMatchObject({
      preVote: true, unsafeNoFsync: false, logOutputs: ['stderr'], enableGrpcGateway: true, initialCorruptCheck: false,
      grpcLimits: { txnOpsMax: 128, requestBytesMax: 1572864, keepAliveMinTimeMs: 5000, keepAliveIntervalMs: 7_200_000, keepAliveTimeoutMs: 20_000 },
      auth: { token: 'simple', bcryptCost: 10, tokenTtlSeconds: 300 }, tlsPolicy: { minVersion: 'TLSv1.2' },
    });
  });

  it('lets an https URL use auto TLS instead of certificate files', () => {
    expect(() => parse(['--listen-client-urls', 'https://127.0.0.1:2379'])).toThrow(/must be provided/);
    expect(parse(['--listen-client-urls', 'https://127.0.0.1:2379', '--auto-tls']).config.autoTls).toEqual({ client: true, peer: false, validityYears: 1 });
  });

  it('carries allowed CNs and hostnames with the certificate files, warning when client certs are not required', () => {
    const cert = file('c.pem', 'c');
    const { config, warnings } = parse([
      '--peer-cert-file', cert, '--peer-key-file', cert, '--peer-trusted-ca-file', cert, '--peer-client-cert-auth',
      '--peer-cert-allowed-cn', 'etcd-peer', '--peer-cert-allowed-hostname', 'a.example,b.example',
      '--cert-file', cert, '--key-file', cert, '--client-cert-allowed-hostname', 'c.example',
    ]);
    expect(config.peerTls).toMatchObject({ allowedCns: ['etcd-peer'], allowedHostnames: ['a.example', 'b.example'] });
    expect(config.clientTls).toMatchObject({ allowedHostnames: ['c.example'] });
    expect(warnings).toEqual(['--client-cert-allowed-hostname has no effect without --client-cert-auth']);
  });

  it('reads etcd ETCD_* variables, ETCETERA_* winning', () => {
    const r = parse([], { ETCD_NAME: 'from-etcd', ETCD_MAX_TXN_OPS: '64', ETCETERA_MAX_TXN_OPS: '32', ETCD_UNSUPPORTED_ARCH: 'arm64' });
    expect(r.config.name).toBe('from-etcd');
    expect(r.config.grpcLimits?.txnOpsMax).toBe(32);
    expect(r.warnings).toEqual([]);
  });

  it('picks the gRPC server by --grpc-server or ETCETERA_GRPC_SERVER, leaving it to the server when neither says', () => {
    expect(parse(['--grpc-server', 'h2']).config.grpcServer).toBe('h2');
    expect(parse([], { ETCETERA_GRPC_SERVER: 'grpc-js' }).config.grpcServer).toBe('grpc-js');
    expect(parse([]).config.grpcServer).toBeUndefined();
    expect(() => parse(['--grpc-server', 'netty'])).toThrow(/grpc-server/);
  });

  it('reads etcd YAML: durations as nanoseconds, nested TLS and socket sections, list values, renamed keys', () => {
    const yaml = file('etcd35.yaml', [
      'experimental-watch-progress-notify-interval: 5000000000', 'grpc-keepalive-interval: 30000000000', 'grpc-keepalive-timeout: "3s"',
      'log-outputs: [stderr]', 'cipher-suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]', 'experimental-snapshot-catch-up-entries: 100',
      'client-transport-security:', '  auto-tls: true', '  allowed-hostname: [a.example]',
      'peer-transport-security:', '  auto-tls: true', '  allowed-cn: [etcd-peer]',
      'socket-options:', '  reuse-address: true',
    ].join('\n'));
    const { config, warnings } = parse(['--config-file', yaml]);
    expect(config.grpcLimits).toMatchObject({ keepAliveIntervalMs: 30_000, keepAliveTimeoutMs: 3000 });
    expect(config.watchProgressNotifyIntervalMs).toBe(5000);
    expect(config.autoTls).toEqual({ client: true, peer: true, validityYears: 1 });
    expect(config.tlsPolicy?.ciphers).toBe('ECDHE-RSA-AES256-GCM-SHA384');
    expect(config.peerTls).toBeUndefined(); // auto TLS: the certificates are made at start
    expect(warnings).toEqual([
      expect.stringMatching(/^--socket-reuse-address: accepted/),
      expect.stringMatching(/^--experimental-snapshot-catchup-entries: accepted/),
      '--client-cert-allowed-hostname has no effect without --client-cert-auth',
      '--peer-cert-allowed-cn has no effect without --peer-client-cert-auth',
    ]);
  });

  const bad: [string, string[], RegExp][] = [
    ['an unknown cipher suite', ['--cipher-suites', 'TLS_FOO'], /unexpected TLS cipher suite "TLS_FOO"/],
    ['cipher suites with TLS 1.3 only', ['--tls-min-version', 'TLS1.3', '--cipher-suites', 'TLS_AES_128_GCM_SHA256'], /^cipher suites cannot be configured when only TLS1.3 is enabled$/],
    ['min above max version', ['--tls-min-version', 'TLS1.3', '--tls-max-version', 'TLS1.2'], /^min version \(TLS1.3\) is greater than max version \(TLS1.2\)$/],
    ['a bad TLS version', ['--tls-min-version', 'TLS1.1'], /must be one of TLS1.2, TLS1.3/],
    ['a bad duration', ['--grpc-keepalive-timeout', '5 seconds'], /expected a duration like 5s/],
    ['a request limit above what the log carries', ['--max-request-bytes', String(64 * 1024 * 1024)], /above the largest request/],
    ['a zero progress interval', ['--experimental-watch-progress-notify-interval', '0'], /^--experimental-watch-progress-notify-interval must be >0$/],
    ['zero txn ops', ['--max-txn-ops', '0'], /--max-txn-ops must be at least 1/],
    ['txn ops beyond sub-revisions', ['--max-txn-ops', '40000'], /must be below 32768/],
    ['an unknown auth token type', ['--auth-token', 'kerberos'], /unknown token type "kerberos"/],
    ['a bcrypt cost out of range', ['--bcrypt-cost', '3'], /^invalid bcrypt-cost: 3, it should be between 4 and 31$/],
    ['a zero certificate validity', ['--auto-tls', '--self-signed-cert-validity', '0'], /selfSignedCertValidity is invalid/],
    ['a CRL without TLS', ['--client-crl-file', '/etc/hostname'], /--client-crl-file needs TLS/],
    ['an unreadable CRL', ['--auto-tls', '--client-crl-file', join(dir, 'none.crl')], /cannot read --client-crl-file .*ENOENT/],
    ['a logger other than zap', ['--logger', 'capnslog'], /--logger.*must be one of zap/],
  ];
  for (const [what, argv, message] of bad) {
    it(`rejects ${what}`, () => {
      expect(() => parse(argv)).toThrow(ConfigError);
      expect(() => parse(argv)).toThrow(message);
    });
  }

  it('answers --version as etcd does', () => {
    expect(parseConfig({ argv: ['--version'] }).kind).toBe('version');
  });
});
