/**
 * Auth, differential: one script of etcdctl user / role / auth commands and permission-denied cases, run
 * against a real etcd 3.4 and against etcetera, outputs compared byte for byte after normalising what differs
 * by nature (client log timestamps and ids, ports, lease ids). Then root-only member changes and auth state
 * surviving a restart. Without /usr/bin/etcd (or etcdctl) the test is skipped, unless CI is set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { etcdctlPath, freePort, haveEtcdctl, killAll, removeDir, startServer, tempDir } from './harness.js';

const etcdPath = '/usr/bin/etcd';
const haveEtcd = existsSync(etcdPath);
if (!haveEtcd && process.env.CI) throw new Error(`${etcdPath} is required in CI for the auth differential test`);
if (!haveEtcd) console.warn(`skipping the auth differential test: ${etcdPath} not found`);
const runnable = haveEtcd && haveEtcdctl();

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await killAll();
});

interface Step {
  args: string[];
  input?: string;
}

const as = (user: string, ...args: string[]): Step => ({ args: [`--user=${user}`, ...args] });
const step = (...args: string[]): Step => ({ args });

/** etcdctl's own output for one command, with stdin. */
function ctl(endpoint: string, s: Step): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(etcdctlPath, [`--endpoints=${endpoint}`, '--command-timeout=5s', ...s.args], {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(`$ ${s.args.join(' ')}\n${out}rc=${code}\n`);
    });
    child.stdin.end(s.input ?? '');
  });
}

/** Client log lines carry a timestamp and a random client id: keep their error text only. */
export function normalise(text: string): string {
  return text
    .replace(/^\{"level":"warn".*"error":"(.*)"\}$/gm, 'retry: $1')
    .replace(/lease [0-9a-f]+ granted/g, 'lease <id> granted')
    .replace(/^[0-9a-f]{16}$/gm, '<lease id>')
    .replace(/127\.0\.0\.1:\d+/g, '<endpoint>');
}

const script: Step[] = [
  step('auth', 'enable'),
  step('user', 'add', 'root:rootpw'),
  step('user', 'add', 'alice:alicepw'),
  step('user', 'add', 'alice:other'),
  step('user', 'add', 'nopw', '--no-password'),
  step('role', 'add', 'reader'),
  step('role', 'add', 'reader'),
  step('role', 'add', 'root'),
  step('role', 'grant-permission', 'reader', 'read', 'foo'),
  step('role', 'grant-permission', 'reader', 'readwrite', '--prefix', 'pre/'),
  step('role', 'grant-permission', 'reader', 'write', '--from-key', 'zz'),
  step('role', 'grant-permission', 'reader', 'read', 'a', 'c'),
  step('role', 'grant-permission', 'reader', 'read', 'c', 'e'),
  step('role', 'grant-permission', 'nosuch', 'read', 'foo'),
  step('role', 'get', 'reader'),
  step('role', 'list'),
  step('user', 'list'),
  step('user', 'grant-role', 'alice', 'reader'),
  step('user', 'grant-role', 'alice', 'reader'),
  step('user', 'grant-role', 'alice', 'nosuch'),
  step('user', 'grant-role', 'nosuch', 'reader'),
  step('user', 'get', 'alice'),
  step('user', 'get', 'nosuch'),
  step('auth', 'enable'),
  step('user', 'grant-role', 'root', 'root'),
  step('auth', 'enable'),
  step('get', 'foo'),
  step('put', 'foo', 'x'),
  as('alice:wrong', 'get', 'foo'),
  as('nosuch:pw', 'get', 'foo'),
  as('alice:alicepw', 'get', 'foo'),
  as('alice:alicepw', 'put', 'foo', 'bar'),
  as('root:rootpw', 'put', 'foo', 'bar'),
  as('alice:alicepw', 'get', 'foo'),
  as('alice:alicepw', 'put', 'pre/a', '1'),
  as('alice:alicepw', 'put', 'pre/b', '2', '--prev-kv'),
  as('alice:alicepw', 'get', '--prefix', 'pre/'),
  as('alice:alicepw', 'get', '--prefix', 'p'),
  as('alice:alicepw', 'get', 'b', 'd'),
  as('alice:alicepw', 'get', 'b', 'f'),
  as('alice:alicepw', 'get', '--from-key', 'zz'),
  as('alice:alicepw', 'put', 'zzz', '1'),
  as('alice:alicepw', 'del', 'pre/a'),
  as('alice:alicepw', 'del', 'foo'),
  as('alice:alicepw', 'del', '--prev-kv', 'zzz'),
  { args: ['--user=alice:alicepw', 'txn'], input: 'value("foo") = "bar"\n\nput pre/x 1\n\nput pre/y 2\n\n' },
  { args: ['--user=alice:alicepw', 'txn'], input: 'value("foo") = "bar"\n\nput foo 1\n\n\n' },
  { args: ['--user=alice:alicepw', 'txn'], input: 'value("secret") = "x"\n\nput pre/z 1\n\n\n' },
  as('alice:alicepw', 'user', 'list'),
  as('alice:alicepw', 'user', 'get', 'alice'),
  as('alice:alicepw', 'user', 'get', 'root'),
  as('alice:alicepw', 'role', 'get', 'reader'),
  as('alice:alicepw', 'role', 'list'),
  as('alice:alicepw', 'user', 'add', 'mallory:pw'),
  as('alice:alicepw', 'auth', 'disable'),
  as('alice:alicepw', 'lease', 'grant', '100'),
  as('alice:alicepw', 'alarm', 'list'),
  as('alice:alicepw', 'compaction', '2'),
  as('alice:alicepw', 'defrag'),
  as('alice:alicepw', 'endpoint', 'hashkv'),
  as('alice:alicepw', 'lease', 'list'),
  step('defrag'),
  as('nopw', 'get', 'foo'),
  as('root:rootpw', 'user', 'list'),
  as('root:rootpw', 'role', 'list'),
  as('root:rootpw', 'user', 'delete', 'root'),
  as('root:rootpw', 'role', 'delete', 'root'),
  as('root:rootpw', 'user', 'revoke-role', 'root', 'root'),
  as('root:rootpw', 'user', 'revoke-role', 'alice', 'nosuch'),
  as('root:rootpw', 'role', 'revoke-permission', 'reader', 'foo'),
  as('root:rootpw', 'role', 'revoke-permission', 'reader', 'foo'),
  as('root:rootpw', 'role', 'get', 'reader'),
  as('alice:alicepw', 'get', 'foo'),
  { args: ['--user=root:rootpw', 'user', 'passwd', 'alice', '--interactive=false'], input: 'newpw\n' },
  as('alice:alicepw', 'get', 'pre/x'),
  as('alice:newpw', 'get', 'pre/x'),
  as('root:rootpw', 'role', 'delete', 'reader'),
  as('root:rootpw', 'user', 'get', 'alice'),
  as('alice:newpw', 'get', 'pre/x'),
  as('root:rootpw', 'user', 'delete', 'alice'),
  as('root:rootpw', 'user', 'delete', 'alice'),
  as('root:rootpw', 'auth', 'disable'),
  step('get', 'foo'),
  step('user', 'list'),
  step('auth', 'disable'),
];

/** Edges: empty passwords and names, empty-key and open-ended permissions, users without a password. */
const edgeScript: Step[] = [
  step('user', 'add', 'empty:'),
  step('user', 'add', 'root:rootpw'),
  step('user', 'grant-role', 'root', 'root'),
  step('role', 'add', 'r'),
  step('role', 'grant-permission', 'r', 'read', '--prefix', ''),
  step('role', 'grant-permission', 'r', 'write', '--from-key', ''),
  step('role', 'grant-permission', 'r', 'readwrite', 'x', '--from-key'),
  step('role', 'get', 'r'),
  step('user', 'add', 'u:upw'),
  step('user', 'grant-role', 'u', 'r'),
  step('user', 'add', 'nopw', '--no-password'),
  step('user', 'grant-role', 'nopw', 'r'),
  step('auth', 'enable'),
  as('u:upw', 'get', '--from-key', ''),
  as('u:upw', 'put', 'anything', '1'),
  as('u:upw', 'get', '--prefix', ''),
  as('empty:', 'get', 'a'),
  as('nopw:', 'get', 'a'),
  as('root:rootpw', 'user', 'get', 'nopw'),
  { args: ['--user=root:rootpw', 'user', 'passwd', 'nopw', '--interactive=false'], input: 'x\n' },
  as('nopw:x', 'get', 'a'),
  as('root:rootpw', 'role', 'revoke-permission', 'r', '', '--prefix'),
  as('root:rootpw', 'role', 'get', 'r'),
  as('root:rootpw', 'user', 'delete', 'nosuch'),
  as('root:rootpw', 'role', 'delete', 'nosuch'),
  as('root:rootpw', 'role', 'add', ''),
  as('root:rootpw', 'user', 'add', ':x'),
];

async function runScript(endpoint: string, steps: Step[]): Promise<string> {
  let out = '';
  for (const s of steps) out += await ctl(endpoint, s);
  return normalise(out);
}

async function startEtcd(): Promise<string> {
  const dir = tempDir('etcd-auth');
  const [client, peer] = [await freePort(), await freePort()];
  const child: ChildProcess = spawn(etcdPath, [
    '--name', 'auth', '--data-dir', dir, '--logger', 'zap', '--log-level', 'error',
    '--listen-client-urls', `http://127.0.0.1:${client}`, '--advertise-client-urls', `http://127.0.0.1:${client}`,
    '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
    '--initial-cluster', `auth=http://127.0.0.1:${peer}`,
  ], { stdio: ['ignore', 'ignore', 'ignore'] });
  cleanups.push(() => {
    child.kill('SIGKILL');
    removeDir(dir);
  });
  const endpoint = `127.0.0.1:${client}`;
  for (let attempt = 0; ; attempt++) {
    if ((await ctl(endpoint, step('endpoint', 'health'))).includes('is healthy')) return endpoint;
    if (attempt > 60 || child.exitCode !== null) throw new Error('etcd did not start');
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.skipIf(!runnable)('auth against etcd 3.4, through etcdctl', () => {
  it('answers the user, role, auth and permission-denied script byte for byte as etcd', async () => {
    const etcdEndpoint = await startEtcd();
    const ours = await startServer({ name: 'auth-diff' });
    const [theirs, mine] = [await runScript(etcdEndpoint, script), await runScript(`127.0.0.1:${ours.clientPort}`, script)];
    if (process.env.AUTH_DIFF_DUMP) writeFileSync(process.env.AUTH_DIFF_DUMP, `${theirs}\n=====\n${mine}`);
    expect(mine).toBe(theirs);
  }, 300_000);

  it('answers the edge cases (empty passwords and keys, open ranges, password-less users) as etcd', async () => {
    const etcdEndpoint = await startEtcd();
    const ours = await startServer({ name: 'auth-edges' });
    const [theirs, mine] = [await runScript(etcdEndpoint, edgeScript), await runScript(`127.0.0.1:${ours.clientPort}`, edgeScript)];
    expect(mine).toBe(theirs);
  }, 300_000);

  it('refuses member changes to users without the root role, and keeps users and roles across a restart', async () => {
    const dataDir = tempDir('auth-restart');
    cleanups.push(() => removeDir(dataDir));
    let sp = await startServer({ name: 'auth-restart', dataDir });
    const ep = `127.0.0.1:${sp.clientPort}`;
    for (const s of [
      step('user', 'add', 'root:rootpw'), step('user', 'grant-role', 'root', 'root'),
      step('user', 'add', 'bob:bobpw'), step('role', 'add', 'w'), step('role', 'grant-permission', 'w', 'readwrite', 'k'),
      step('user', 'grant-role', 'bob', 'w'), step('auth', 'enable'),
    ]) expect(await ctl(ep, s)).toMatch(/rc=0\n$/);
    expect(await ctl(ep, as('bob:bobpw', 'member', 'add', 'x', '--peer-urls=http://127.0.0.1:1'))).toContain('Error: etcdserver: permission denied');
    expect(await ctl(ep, as('root:rootpw', 'defrag'))).toMatch(/rc=0\n$/);

    await sp.kill('SIGTERM');
    sp = await startServer({ name: 'auth-restart', dataDir, clientPort: sp.clientPort, peerPort: sp.peerPort });
    expect(await ctl(ep, step('get', 'k'))).toContain('Error: etcdserver: user name is empty');
    expect(await ctl(ep, as('bob:bobpw', 'put', 'k', 'v'))).toMatch(/^OK\nrc=0\n$/m);
    expect(await ctl(ep, as('bob:bobpw', 'put', 'other', 'v'))).toContain('Error: etcdserver: permission denied');
    expect(await ctl(ep, as('root:rootpw', 'user', 'get', 'bob'))).toContain('User: bob\nRoles: w\n');
    expect(await ctl(ep, as('root:rootpw', 'role', 'get', 'w'))).toContain('KV Read:\n\tk\nKV Write:\n\tk\n');
  }, 120_000);

  it('expires leases while auth is enabled: the attached key goes, as in etcd (TestCtlV3AuthLeaseTestTimeToLiveExpired)', async () => {
    const sp = await startServer({ name: 'auth-lease' });
    const ep = `127.0.0.1:${sp.clientPort}`;
    for (const s of [step('user', 'add', 'root:rootpw'), step('user', 'grant-role', 'root', 'root'), step('auth', 'enable')]) {
      expect(await ctl(ep, s)).toMatch(/rc=0\n$/);
    }
    const granted = await ctl(ep, as('root:rootpw', 'lease', 'grant', '2'));
    const id = /lease ([0-9a-f]+) granted/.exec(granted)?.[1];
    expect(id, granted).toBeDefined();
    expect(await ctl(ep, as('root:rootpw', 'put', 'leased', 'v', `--lease=${id}`))).toMatch(/^OK\n/m);
    await new Promise((r) => setTimeout(r, 4500));
    expect(await ctl(ep, as('root:rootpw', 'lease', 'timetolive', id!))).toContain(`lease ${id} already expired`);
    expect(await ctl(ep, as('root:rootpw', 'get', 'leased'))).toMatch(/^\$ [^\n]*\nrc=0\n$/);
  }, 60_000);
});
