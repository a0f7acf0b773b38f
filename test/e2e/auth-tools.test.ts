/**
 * Issue 21, item 5: `etcetera snapshot save` and `etcetera migrate --from-etcd` against an auth-enabled member
 * (ours, and the real etcd) take etcdctl's credentials: `--user NAME:PASSWORD`, `--user NAME --password P`,
 * or ETCDCTL_USER / ETCDCTL_PASSWORD (and ETCDCTL_ENDPOINTS). Before, both failed with "auth: user name is
 * empty" whatever was given. And item 1: a backup of an auth-enabled cluster keeps auth through every restore
 * (ours by us, ours by etcdctl into the real etcd, etcd's by us): users, roles, permissions and the enabled
 * flag. Before, our snapshots carried no auth buckets and a restored cluster served anonymous reads. And the
 * TLS side of the same flags, which the README's backup section promises: --cacert, --cert, --key,
 * --insecure-skip-tls-verify and their ETCDCTL_* variables against a member with --client-cert-auth.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { etcdctl as etcdctlRef, haveEtcd, startEtcd } from '../backup/etcd-ref.js';
import { cliPath, etcdctl, freePort, haveEtcdctl, killAll, repoRoot, startServer, tempDir, waitFor } from './harness.js';

const execFileP = promisify(execFile);
const fixtures = join(repoRoot, 'test/e2e/fixtures/crl');
const tls = {
  ca: join(fixtures, 'ca.pem'), serverCert: join(fixtures, 'server.pem'), serverKey: join(fixtures, 'server.key'),
  clientCert: join(fixtures, 'client.pem'), clientKey: join(fixtures, 'client.key'),
};
afterAll(async () => {
  await killAll();
}, 30_000);

async function etcetera(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  try {
    const r = await execFileP(process.execPath, [cliPath, ...args], { env: { ...process.env, ...env }, timeout: 60_000 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : 1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

describe.skipIf(!haveEtcdctl())('tools with credentials under auth', () => {
  it('etcetera snapshot save takes --user, --password and the ETCDCTL_* environment', async () => {
    const sp = await startServer({ name: 'auth-tools' });
    const ep = `127.0.0.1:${sp.clientPort}`;
    for (const args of [['user', 'add', 'root:rootpw'], ['user', 'grant-role', 'root', 'root'], ['user', 'add', 'bob:bobpw'], ['--user=root:rootpw', 'put', 'k', 'v'], ['auth', 'enable']]) {
      expect((await etcdctl(ep, args)).code, args.join(' ')).toBe(0);
    }
    const dir = tempDir('auth-tools');
    // Snapshot is root's alone (etcd 3.5 refuses it with auth's own message).
    const bob = await etcetera(['snapshot', 'save', join(dir, 'bob.db'), '--endpoints', ep, '--user', 'bob:bobpw']);
    expect(bob.code).not.toBe(0);
    expect(bob.out).toContain('auth: permission denied');
    const without = await etcetera(['snapshot', 'save', join(dir, 'none.db'), '--endpoints', ep]);
    expect(without.code).not.toBe(0);
    expect(without.out).toContain('user name is empty');
    const wrong = await etcetera(['snapshot', 'save', join(dir, 'wrong.db'), '--endpoints', ep, '--user', 'root:nope']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.out).toContain('authentication failed, invalid user ID or password');
    for (const [name, args, env] of [
      ['flag.db', ['--endpoints', ep, '--user', 'root:rootpw'], {}],
      ['password.db', ['--endpoints', ep, '--user', 'root', '--password', 'rootpw'], {}],
      ['env.db', [], { ETCDCTL_ENDPOINTS: ep, ETCDCTL_USER: 'root', ETCDCTL_PASSWORD: 'rootpw' }],
    ] as const) {
      const r = await etcetera(['snapshot', 'save', join(dir, name), ...args], env);
      expect(r.code, r.out).toBe(0);
      expect((await etcdctl(ep, ['snapshot', 'status', join(dir, name), '-w', 'json'])).code).toBe(0);
    }
  }, 120_000);

  it("etcetera snapshot save takes etcdctl's TLS flags (--cacert, --cert, --key, --insecure-skip-tls-verify) and ETCDCTL_* variables; a flag wins", async () => {
    const [cp, pp] = [await freePort(), await freePort()];
    const url = `https://127.0.0.1:${cp}`;
    await startServer({
      name: 'tls-tools', clientPort: cp, peerPort: pp, waitReady: false,
      args: ['--listen-client-urls', url, '--advertise-client-urls', url, '--cert-file', tls.serverCert, '--key-file', tls.serverKey, '--trusted-ca-file', tls.ca, '--client-cert-auth'],
    });
    const ep = `127.0.0.1:${cp}`;
    const certArgs = ['--cacert', tls.ca, '--cert', tls.clientCert, '--key', tls.clientKey];
    await waitFor('the TLS member', async () => (await etcdctl(ep, [...certArgs, 'put', 'k', 'v'])).code === 0 || undefined, 30_000);
    const dir = tempDir('tls-tools');
    const certEnv = { ETCDCTL_CACERT: tls.ca, ETCDCTL_CERT: tls.clientCert, ETCDCTL_KEY: tls.clientKey };
    for (const [name, args, env, ok] of [
      ['flags.db', [...certArgs], {}, true],
      ['env.db', [], { ...certEnv, ETCDCTL_ENDPOINTS: ep }, true],
      ['skip-verify.db', ['--insecure-skip-tls-verify', '--cert', tls.clientCert, '--key', tls.clientKey], {}, true],
      // A flag wins over the environment: ETCDCTL_CERT names a file that does not exist, --cert a good one.
      ['flag-wins.db', ['--cert', tls.clientCert], { ...certEnv, ETCDCTL_CERT: join(dir, 'missing.pem') }, true],
      ['no-client-cert.db', ['--cacert', tls.ca], {}, false],
      ['untrusted.db', ['--cert', tls.clientCert, '--key', tls.clientKey], {}, false],
    ] as const) {
      const r = await etcetera(['snapshot', 'save', join(dir, name), ...(name === 'env.db' ? [] : ['--endpoints', ep]), ...args], env);
      expect(r.code === 0, `${name}: ${r.out}`).toBe(ok);
      if (ok) expect((await etcdctl(ep, ['snapshot', 'status', join(dir, name), '-w', 'json'])).code).toBe(0);
    }
  }, 120_000);

  it.skipIf(!haveEtcd)('etcetera migrate --from-etcd takes --user against a real etcd with auth enabled', async () => {
    const etcd = await startEtcd();
    try {
      for (const args of [['user', 'add', 'root:rootpw'], ['user', 'grant-role', 'root', 'root'], ['--user=root:rootpw', 'put', 'm', '1'], ['auth', 'enable']]) {
        await etcdctlRef(args, etcd.endpoint);
      }
      const peer = await freePort();
      const dataDir = join(tempDir('auth-migrate'), 'd');
      const r = await etcetera([
        'migrate', '--from-etcd', etcd.endpoint, '--data-dir', dataDir, '--name', 'mig', '--user', 'root:rootpw',
        '--initial-cluster', `mig=http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
      ]);
      expect(r.code, r.out).toBe(0);
      expect(r.out).toContain('restored snapshot');
    } finally {
      await etcd.stop();
    }
  }, 120_000);

  it('keeps auth through snapshot save and restore: ours by us, ours by etcdctl into etcd, etcd\'s by us', async () => {
    const script = [
      ['user', 'add', 'root:rootpw'], ['user', 'grant-role', 'root', 'root'], ['user', 'add', 'bob:bobpw'],
      ['role', 'add', 'w'], ['role', 'grant-permission', 'w', 'readwrite', 'k'], ['user', 'grant-role', 'bob', 'w'],
      ['--user=root:rootpw', 'put', 'k', 'secret'], ['auth', 'enable'],
    ];
    /** An endpoint restored from `file` must refuse anonymous reads and serve bob within his permission. */
    const expectAuth = async (ep: string): Promise<void> => {
      expect((await etcdctl(ep, ['get', 'k'])).stderr).toContain('user name is empty');
      expect((await etcdctl(ep, ['--user=bob:bobpw', 'get', 'k', '--print-value-only'])).stdout).toBe('secret\n');
      expect((await etcdctl(ep, ['--user=bob:bobpw', 'put', 'other', 'v'])).stderr).toContain('permission denied');
    };
    const dir = tempDir('auth-backup');
    const ours = await startServer({ name: 'auth-src' });
    for (const args of script) expect((await etcdctl(`127.0.0.1:${ours.clientPort}`, args)).code, args.join(' ')).toBe(0);
    const file = join(dir, 'ours.db');
    expect((await etcetera(['snapshot', 'save', file, '--endpoints', ours.clientUrl, '--user', 'root:rootpw'])).code).toBe(0);
    await ours.kill();

    const peer = await freePort();
    const restored = join(dir, 'restored');
    const r = await etcetera(['snapshot', 'restore', file, '--data-dir', restored, '--name', 'rr', '--initial-cluster', `rr=http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`]);
    expect(r.code, r.out).toBe(0);
    const back = await startServer({ name: 'rr', dataDir: restored, peerPort: peer });
    await expectAuth(`127.0.0.1:${back.clientPort}`);
    await back.kill();

    if (!haveEtcd) return;
    const etcdPeer = await freePort();
    const etcdDir = join(dir, 'etcd-restored');
    await etcdctlRef(['snapshot', 'restore', file, '--data-dir', etcdDir, '--name', 'ref', '--initial-cluster', `ref=http://127.0.0.1:${etcdPeer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`]);
    const etcd = await startEtcdRestored(etcdDir, etcdPeer);
    try {
      await expectAuth(etcd.endpoint.replace('http://', ''));
    } finally {
      await etcd.stop();
    }

    // etcd's own snapshot of an auth-enabled etcd, restored by us.
    const src = await startEtcd();
    const etcdFile = join(dir, 'etcd.db');
    try {
      for (const args of script) await etcdctlRef(args, src.endpoint);
      await etcdctlRef(['--user=root:rootpw', 'snapshot', 'save', etcdFile], src.endpoint);
    } finally {
      await src.stop();
    }
    const peer2 = await freePort();
    const fromEtcd = join(dir, 'from-etcd');
    expect((await etcetera(['snapshot', 'restore', etcdFile, '--data-dir', fromEtcd, '--name', 'fe', '--initial-cluster', `fe=http://127.0.0.1:${peer2}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer2}`])).code).toBe(0);
    const fe = await startServer({ name: 'fe', dataDir: fromEtcd, peerPort: peer2 });
    await expectAuth(`127.0.0.1:${fe.clientPort}`);
  }, 180_000);
});

/** The real etcd on a data directory restored by etcdctl (its health check needs no credentials: it may fail). */
async function startEtcdRestored(dataDir: string, peerPort: number): Promise<{ endpoint: string; stop(): Promise<void> }> {
  const { spawn } = await import('node:child_process');
  const client = await freePort();
  const endpoint = `http://127.0.0.1:${client}`;
  const child = spawn('/usr/bin/etcd', [
    '--name', 'ref', '--data-dir', dataDir, '--log-level', 'error', '--logger', 'zap',
    '--listen-client-urls', endpoint, '--advertise-client-urls', endpoint,
    '--listen-peer-urls', `http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
    '--initial-cluster', `ref=http://127.0.0.1:${peerPort}`,
  ], { stdio: 'ignore' });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  for (let i = 0; i < 100; i++) {
    if ((await etcdctl(endpoint.replace('http://', ''), ['--user=root:rootpw', 'endpoint', 'health'])).code === 0) return { endpoint, stop };
    await new Promise((res) => setTimeout(res, 200));
  }
  await stop();
  throw new Error('the restored etcd did not become healthy');
}
