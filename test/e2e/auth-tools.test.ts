/**
 * Issue 21, item 5: `etcetera snapshot save` and `etcetera migrate --from-etcd` against an auth-enabled member
 * (ours, and the real etcd) take etcdctl's credentials: `--user NAME:PASSWORD`, `--user NAME --password P`,
 * or ETCDCTL_USER / ETCDCTL_PASSWORD (and ETCDCTL_ENDPOINTS). Before, both failed with "auth: user name is
 * empty" whatever was given.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { etcdctl as etcdctlRef, haveEtcd, startEtcd } from '../backup/etcd-ref.js';
import { cliPath, etcdctl, freePort, haveEtcdctl, killAll, startServer, tempDir } from './harness.js';

const execFileP = promisify(execFile);
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
    for (const args of [['user', 'add', 'root:rootpw'], ['user', 'grant-role', 'root', 'root'], ['--user=root:rootpw', 'put', 'k', 'v'], ['auth', 'enable']]) {
      expect((await etcdctl(ep, args)).code, args.join(' ')).toBe(0);
    }
    const dir = tempDir('auth-tools');
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
});
