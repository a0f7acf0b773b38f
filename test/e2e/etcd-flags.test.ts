/**
 * etcetera starts and serves with the command lines and config files etcd users already have: every flag
 * etcd 3.5's own e2e harness passes (tests/framework/e2e/cluster.go), a config file shaped as k3s writes it
 * for its embedded etcd (pkg/daemons/executor ETCDConfig.ToConfigFile: sorted keys, nested transport
 * security, durations in nanoseconds), client TLS with a CRL and cipher suites (a revoked client certificate is
 * refused and the refusal logged), and --auto-tls.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  cliPath, ensureBuilt, etcdctl, freePort, haveEtcdctl, killAll, removeDir, repoRoot, sleep, startServer, tempDir, waitFor,
} from './harness.js';

const enabled = haveEtcdctl();
const fixtures = join(repoRoot, 'test/e2e/fixtures/crl');
const ca = join(fixtures, 'ca.pem');
const serverCert = join(fixtures, 'server.pem');
const serverKey = join(fixtures, 'server.key');
const clientTls = ['--cacert', ca, '--cert', join(fixtures, 'client.pem'), '--key', join(fixtures, 'client.key')];
const revokedTls = ['--cacert', ca, '--cert', join(fixtures, 'revoked.pem'), '--key', join(fixtures, 'revoked.key')];

const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops) await stop();
  await killAll();
}, 30_000);

/** The CLI with exactly these arguments (no harness defaults), killed at the end. */
function spawnCli(args: string[]): { output: string[]; exited: Promise<number | null> } {
  ensureBuilt();
  const proc = spawn(process.execPath, [cliPath, 'server', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const collect = (b: Buffer): void => void output.push(...b.toString('utf8').split('\n').filter((l) => l !== ''));
  proc.stdout!.on('data', collect);
  proc.stderr!.on('data', collect);
  const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
  stops.push(async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
  });
  return { output, exited };
}

/** `etcdctl txn` with these success ops (no compares, no failure ops); returns its combined output. */
async function etcdctlTxn(endpoint: string, ops: string[]): Promise<string> {
  const { execFile } = await import('node:child_process');
  return new Promise((resolve) => {
    const child = execFile('/usr/bin/etcdctl', [`--endpoints=${endpoint.replace(/^https?:\/\//, '')}`, 'txn'], { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 15_000 },
      (_error, stdout, stderr) => resolve(stdout + stderr));
    child.stdin!.end(`\n${ops.join('\n')}\n\n\n`);
  });
}

async function putGet(endpoint: string, tlsArgs: string[], key: string): Promise<string> {
  return waitFor(`put/get on ${endpoint}`, async () => {
    const put = await etcdctl(endpoint, [...tlsArgs, 'put', key, 'v1']);
    if (put.code !== 0) return undefined;
    const get = await etcdctl(endpoint, [...tlsArgs, 'get', key, '--print-value-only']);
    return get.code === 0 ? get.stdout.trim() : undefined;
  }, 30_000);
}

describe.runIf(enabled)('etcd command lines and config files', () => {
  it('starts and serves with every flag etcd 3.5\'s e2e harness passes', async () => {
    const walDir = tempDir('flags-wal');
    const peerPort = await freePort();
    const sp = await startServer({
      name: 'infra1',
      peerPort,
      args: [
        '--initial-cluster-token', 'new', '--snapshot-count', '100000', '--listen-client-http-urls', `http://127.0.0.1:${await freePort()}`,
        '--quota-backend-bytes', '2147483648', '--strict-reconfig-check=false', '--enable-v2', '--experimental-initial-corrupt-check',
        '--experimental-stop-grpc-service-on-defrag', '--auth-token', 'simple', '--v2-deprecation', 'not-yet', '--log-level', 'info',
        '--max-concurrent-streams', '100', '--experimental-corrupt-check-time', '1m0s', '--experimental-compact-hash-check-enabled',
        '--experimental-compact-hash-check-time', '1m0s', '--experimental-watch-progress-notify-interval', '5s',
        '--experimental-compaction-batch-limit', '1000', '--wal-dir', walDir, '--initial-cluster', `infra1=http://127.0.0.1:${peerPort}`,
        '--initial-cluster-state', 'new', '--experimental-snapshot-catchup-entries', '5000', '--next-cluster-version-compatible',
        '--peer-auto-tls', '--max-request-bytes', '4096', '--max-txn-ops', '2',
      ],
    });
    expect(await putGet(sp.clientUrl, [], 'harness')).toBe('v1');
    const big = await etcdctl(sp.clientUrl, ['put', 'big', 'x'.repeat(5000)]);
    expect(big.stderr).toContain('etcdserver: request is too large');
    const txn = await etcdctlTxn(sp.clientUrl, ['put a 1', 'put b 2', 'put c 3']);
    expect(txn).toContain('etcdserver: too many operations in txn request');
    const log = sp.output.join('\n');
    expect(log).toMatch(/--enable-v2: accepted for etcd compatibility; the v2 API is not served/);
    expect(log).toMatch(/initial corruption check|bootstrapped member/);
    await sp.kill();
    // Restart: the member has data now, so the initial corruption check runs (alone: no peers to ask).
    const again = await startServer({ name: 'infra1', dataDir: sp.dataDir, peerPort, clientPort: sp.clientPort, args: ['--wal-dir', walDir, '--experimental-initial-corrupt-check', '--peer-auto-tls'] });
    expect((await etcdctl(again.clientUrl, ['get', 'harness', '--print-value-only'])).stdout.trim()).toBe('v1');
    expect(again.output.join('\n')).toMatch(/initial corruption checking passed; no corruption/);
    await again.kill();
    removeDir(sp.dataDir);
    removeDir(walDir);
  }, 90_000);

  it('starts from a k3s-generated etcd config file', async () => {
    const dataDir = tempDir('k3s');
    const [client, client2, peerLocal, peer, metrics, http] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort()]);
    const name = 'k3s-server-1-3f2a9c1d';
    const config = join(dataDir, 'config');
    writeFileSync(config, [
      `advertise-client-urls: https://127.0.0.1:${client}`,
      'client-transport-security:',
      `  cert-file: ${serverCert}`,
      '  client-cert-auth: true',
      `  key-file: ${serverKey}`,
      `  trusted-ca-file: ${ca}`,
      `data-dir: ${dataDir}`,
      'election-timeout: 5000',
      'experimental-initial-corrupt-check: true',
      'experimental-watch-progress-notify-interval: 5000000000',
      'heartbeat-interval: 500',
      `initial-advertise-peer-urls: https://127.0.0.1:${peer}`,
      `initial-cluster: ${name}=https://127.0.0.1:${peer}`,
      'initial-cluster-state: new',
      `listen-client-http-urls: https://127.0.0.1:${http}`,
      `listen-client-urls: https://127.0.0.1:${client},https://127.0.0.1:${client2}`,
      `listen-metrics-urls: http://127.0.0.1:${metrics}`,
      // k3s listens on loopback first and advertises the node's address, listed second.
      `listen-peer-urls: https://127.0.0.1:${peerLocal},https://127.0.0.1:${peer}`,
      'log-outputs:',
      '- stderr',
      'logger: zap',
      `name: ${name}`,
      'peer-transport-security:',
      `  cert-file: ${serverCert}`,
      '  client-cert-auth: true',
      `  key-file: ${serverKey}`,
      `  trusted-ca-file: ${ca}`,
      'snapshot-count: 10000',
      'socket-options: {}',
      '',
    ].join('\n'));
    const p = spawnCli(['--config-file', config, '--storage-profile', 'ssd']);
    expect(await putGet(`127.0.0.1:${client2}`, clientTls, 'k3s')).toBe('v1');
    const scrape = await fetch(`http://127.0.0.1:${metrics}/metrics`).then((r) => r.text());
    expect(scrape).toMatch(/^etcd_server_has_leader 1$/m);
    for (const port of [peerLocal, peer]) expect(p.output.join('\n')).toContain(`"peer transport listening","component":"transport","url":"https://127.0.0.1:${port}"`);
    removeDir(dataDir);
  }, 90_000);

  // The CRL in DER, as etcd's own fixture (integration/fixtures/revoke.crl) is: it failed to start with
  // "Failed to parse CRL" before (issue 21, item 4); PEM reads the same (test/tls/tls-policy.test.ts).
  it('refuses a revoked client certificate (--client-crl-file, a DER CRL), logs the refusal, and serves the others', async () => {
    const dataDir = tempDir('crl');
    const [client, peer] = await Promise.all([freePort(), freePort()]);
    const p = spawnCli([
      '--name', 'crl', '--data-dir', dataDir, '--storage-profile', 'ssd',
      '--listen-client-urls', `https://127.0.0.1:${client}`, '--advertise-client-urls', `https://127.0.0.1:${client}`,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`,
      '--cert-file', serverCert, '--key-file', serverKey, '--trusted-ca-file', ca, '--client-cert-auth',
      '--client-crl-file', join(fixtures, 'crl.der'),
      '--cipher-suites', 'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384', '--tls-max-version', 'TLS1.2',
    ]);
    expect(await putGet(`127.0.0.1:${client}`, clientTls, 'crl')).toBe('v1');
    const revoked = await etcdctl(`127.0.0.1:${client}`, [...revokedTls, '--dial-timeout=2s', 'get', 'crl']);
    expect(revoked.code).not.toBe(0);
    await waitFor('the rejected connection in the log', async () => p.output.some((l) => /"rejected connection".*"remote-addr":"127\.0\.0\.1:\d+".*transport: certificate serial 1002 revoked/.test(l)) || undefined);
    removeDir(dataDir);
  }, 60_000);

  it('serves TLS with certificates it generated (--auto-tls), and keeps them across restarts', async () => {
    const dataDir = tempDir('autotls');
    const [client, peer] = await Promise.all([freePort(), freePort()]);
    const args = [
      '--name', 'auto', '--data-dir', dataDir, '--storage-profile', 'ssd', '--auto-tls', '--self-signed-cert-validity', '2',
      '--listen-client-urls', `https://127.0.0.1:${client}`, '--advertise-client-urls', `https://127.0.0.1:${client}`,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`,
    ];
    const insecure = ['--insecure-transport=false', '--insecure-skip-tls-verify'];
    const first = spawnCli(args);
    expect(await putGet(`127.0.0.1:${client}`, insecure, 'auto')).toBe('v1');
    expect(first.output.join('\n')).toMatch(/created cert file.*fixtures\/client\/cert\.pem/);
    // A client that verifies against a CA it trusts refuses the self-signed certificate.
    expect((await etcdctl(`127.0.0.1:${client}`, ['--cacert', ca, '--dial-timeout=2s', 'get', 'auto'])).code).not.toBe(0);
    await stops.pop()!();
    await sleep(200);
    const second = spawnCli(args);
    expect(await putGet(`127.0.0.1:${client}`, insecure, 'auto')).toBe('v1');
    expect(second.output.join('\n')).not.toMatch(/created cert file/);
    removeDir(dataDir);
  }, 60_000);
});
