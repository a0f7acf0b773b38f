/**
 * One real member, driven by Debian's etcdctl 3.4 (a real Go client): every service it can reach, and the
 * exact error messages it prints.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { etcdctl, haveEtcdctl, killAll, startServer, tempDir, type ServerProcess } from './harness.js';

const enabled = haveEtcdctl();

describe.runIf(enabled)('a single member through etcdctl', () => {
  let s: ServerProcess;
  const ctl = (...args: string[]) => etcdctl(s.clientUrl, args);

  beforeAll(async () => {
    s = await startServer({ name: 'solo', args: ['--cluster-init'] });
  }, 60_000);
  afterAll(killAll);

  it('puts, gets, deletes and prints revisions', async () => {
    expect((await ctl('put', 'foo', 'bar')).stdout.trim()).toBe('OK');
    expect((await ctl('put', 'foo2', 'baz')).stdout.trim()).toBe('OK');
    expect((await ctl('get', 'foo', '--prefix')).stdout).toBe('foo\nbar\nfoo2\nbaz\n');
    const json = JSON.parse((await ctl('get', 'foo', '-w', 'json')).stdout);
    expect(json.kvs[0].version).toBe(1);
    expect(json.header.revision).toBeGreaterThanOrEqual(3);
    expect((await ctl('del', 'foo2')).stdout.trim()).toBe('1');
    expect((await ctl('get', 'foo2')).stdout).toBe('');
  });

  it('runs a txn', async () => {
    const { stdout } = await etcdctlWithInput(s.clientUrl, 'value("foo") = "bar"\n\nput txnkey yes\n\nput txnkey no\n\n');
    expect(stdout).toContain('SUCCESS');
    expect((await ctl('get', 'txnkey', '--print-value-only')).stdout.trim()).toBe('yes');
  });

  it('grants leases and deletes attached keys on revoke', async () => {
    const grant = (await ctl('lease', 'grant', '60')).stdout;
    const id = /lease ([0-9a-f]+) granted/.exec(grant)![1]!;
    expect((await ctl('put', 'leased', 'v', `--lease=${id}`)).stdout.trim()).toBe('OK');
    const ttl = (await ctl('lease', 'timetolive', id, '--keys')).stdout;
    expect(ttl).toMatch(/remaining\(\d+s\)/);
    expect(ttl).toContain('leased');
    expect((await ctl('lease', 'list')).stdout).toContain(id);
    expect((await ctl('lease', 'revoke', id)).stdout).toContain('revoked');
    expect((await ctl('get', 'leased')).stdout).toBe('');
    const missing = await ctl('lease', 'revoke', id);
    expect(missing.stderr).toContain('etcdserver: requested lease not found');
  });

  it('reports status, health, members and alarms', async () => {
    const status = JSON.parse((await ctl('endpoint', 'status', '-w', 'json')).stdout);
    expect(status[0].Status.version).toMatch(/^3\.5\./);
    expect(status[0].Status.leader).toBe(status[0].Status.header.member_id);
    expect((await ctl('endpoint', 'health')).stderr + (await ctl('endpoint', 'health')).stdout).toContain('is healthy');
    const members = (await ctl('member', 'list')).stdout.trim().split('\n');
    expect(members).toHaveLength(1);
    expect(members[0]).toContain('started, solo');
    expect((await ctl('alarm', 'list')).stdout).toBe('');
  });

  it('compacts and refuses reads below the compacted revision with etcd\'s message', async () => {
    for (let i = 0; i < 5; i++) await ctl('put', 'c', String(i));
    const rev = JSON.parse((await ctl('get', 'c', '-w', 'json')).stdout).header.revision as number;
    expect((await ctl('compact', String(rev - 2))).stdout).toContain(`compacted revision ${rev - 2}`);
    const old = await ctl('get', 'c', `--rev=${rev - 3}`);
    expect(old.stderr).toContain('etcdserver: mvcc: required revision has been compacted');
    const future = await ctl('get', 'c', `--rev=${rev + 100}`);
    expect(future.stderr).toContain('etcdserver: mvcc: required revision is a future revision');
  });

  it('watches from a past revision', async () => {
    const rev = JSON.parse((await ctl('put', 'w1', 'a', '-w', 'json')).stdout).header.revision as number;
    await ctl('put', 'w1', 'b');
    const { stdout } = await etcdctl(s.clientUrl, ['watch', 'w1', `--rev=${rev}`], 3000);
    expect(stdout).toContain('PUT\nw1\na\nPUT\nw1\nb');
  });

  it('saves a snapshot etcdctl accepts, and defragments', async () => {
    const dir = tempDir('snap');
    const file = join(dir, 'snap.db');
    const r = await ctl('snapshot', 'save', file);
    expect(r.stdout + r.stderr).toContain('Snapshot saved');
    expect(statSync(file).size % 512).toBe(32); // etcd's stream: the database, then its SHA-256
    expect((await ctl('defrag')).stdout).toContain('Finished defragmenting');
  });

  it('answers bad input with etcd\'s exact errors', async () => {
    expect((await ctl('put', '', 'v')).stderr).toContain('etcdserver: key is not provided');
    expect((await ctl('member', 'remove', 'abcdef')).stderr).toContain('etcdserver: member not found');
    expect((await ctl('member', 'promote', 'abcdef')).stderr).toContain('etcdserver: member not found');
  });
});

import { spawn } from 'node:child_process';
function etcdctlWithInput(endpoint: string, input: string, args: string[] = ['txn']): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    let p;
    try {
      p = spawn('/usr/bin/etcdctl', [`--endpoints=${endpoint}`, ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
    } catch (e) {
      reject(e);
      return;
    }
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('error', (e) => reject(Object.assign(e, { stderr: String(e) })));
    p.on('close', () => resolve({ stdout, stderr }));
    p.stdin.end(input);
  });
}
