/**
 * Debian's etcdctl 3.4 (ETCDCTL_API=3) against the gRPC layer over a fake core: what it prints, including
 * etcd's exact error messages. Kept on FakeApi (issue 35) for what a real node cannot give on demand: a
 * snapshot of known bytes to compare `snapshot save`'s file with, and the hub's watcher counts to wait on. Missing etcdctl: skipped with a message locally, a failure under CI.
 *
 * etcdctl 3.4 sends an http:// endpoint verbatim as the HTTP/2 :authority of per-endpoint calls (endpoint
 * status, defrag, hashkv); Node's nghttp2 would reset those streams, so the server repairs the header
 * (authority-fix.ts). Both endpoint forms are exercised below.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.js';

const etcdctlPath = '/usr/bin/etcdctl';
const haveEtcdctl = existsSync(etcdctlPath);
if (!haveEtcdctl) {
  if (process.env.CI) throw new Error(`${etcdctlPath} is missing (CI installs etcd-client)`);
  console.warn(`skipping etcdctl tests: ${etcdctlPath} not found`);
}

let h: Harness;
let dir: string;

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(tmpdir(), 'etcetera-etcdctl-'));
});
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function etcdctl(args: string[], input?: string | Buffer, endpoint = h.endpoint): Promise<Result> {
  return new Promise((resolve) => {
    const child = execFile(
      etcdctlPath,
      [`--endpoints=${endpoint}`, '--dial-timeout=3s', '--command-timeout=5s', ...args],
      { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 15_000, maxBuffer: 8 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(input ?? '');
  });
}

/** The last line etcdctl printed on stderr: its "Error: ..." line (3.4 logs retries as JSON before it). */
const lastLine = (s: string): string => s.trim().split('\n').at(-1) ?? '';

describe.skipIf(!haveEtcdctl)('etcdctl 3.4', () => {
  it('puts, gets by prefix and deletes', async () => {
    expect((await etcdctl(['put', 'foo', 'bar'])).stdout).toBe('OK\n');
    await etcdctl(['put', 'fox', 'baz']);
    expect((await etcdctl(['get', '--prefix', 'fo'])).stdout).toBe('foo\nbar\nfox\nbaz\n');
    expect((await etcdctl(['del', '--prefix', 'fo'])).stdout).toBe('2\n');
    expect((await etcdctl(['get', 'foo'])).stdout).toBe('');
  });

  it('runs a txn from stdin', async () => {
    await etcdctl(['put', 'tx', 'a']);
    const res = await etcdctl(['txn'], 'value("tx") = "a"\n\nput tx b\n\nget tx\n\n');
    expect(res.stdout).toBe('SUCCESS\n\nOK\n');
    expect((await etcdctl(['get', 'tx', '--print-value-only'])).stdout).toBe('b\n');
    const dup = await etcdctl(['txn'], '\nput d 1\nput d 2\n\n\n');
    expect(lastLine(dup.stderr)).toBe('Error: etcdserver: duplicate key given in txn request');
  });

  it('watches a key until killed', async () => {
    const child = spawn(etcdctlPath, [`--endpoints=${h.endpoint}`, 'watch', 'w', '--prev-kv'], {
      env: { ...process.env, ETCDCTL_API: '3' },
    });
    try {
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const deadline = Date.now() + 10_000;
      while (h.api.hub.syncedCount === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await etcdctl(['put', 'w', 'v1']);
      await etcdctl(['put', 'w', 'v2']);
      await etcdctl(['del', 'w']);
      while (!out.includes('DELETE') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(out).toBe('PUT\nw\nv1\nPUT\nw\nv1\nw\nv2\nDELETE\nw\nv2\nw\n\n');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('grants, keeps alive, inspects and revokes a lease', async () => {
    const grant = await etcdctl(['lease', 'grant', '60']);
    const m = /^lease ([0-9a-f]+) granted with TTL\(60s\)\n$/.exec(grant.stdout);
    expect(m).not.toBeNull();
    const leaseId = m![1]!;
    expect((await etcdctl(['put', 'lk', 'v', `--lease=${leaseId}`])).stdout).toBe('OK\n');
    expect((await etcdctl(['lease', 'keep-alive', '--once', leaseId])).stdout).toBe(
      `lease ${leaseId} keepalived with TTL(60)\n`,
    );
    expect((await etcdctl(['lease', 'timetolive', leaseId, '--keys'])).stdout).toMatch(
      new RegExp(`^lease ${leaseId} granted with TTL\\(60s\\), remaining\\((59|60)s\\), attached keys\\(\\[lk\\]\\)\n$`),
    );
    expect((await etcdctl(['lease', 'revoke', leaseId])).stdout).toBe(`lease ${leaseId} revoked\n`);
    expect((await etcdctl(['lease', 'timetolive', leaseId])).stdout).toBe(`lease ${leaseId} already expired\n`);
  });

  it('prints etcd errors for bad input', async () => {
    const cases: [string[], string][] = [
      [['put', '', 'x'], 'Error: etcdserver: key is not provided'],
      [['get', 'foo', '--rev=100000'], 'Error: etcdserver: mvcc: required revision is a future revision'],
      [['lease', 'revoke', '1234'], 'Error: failed to revoke lease (etcdserver: requested lease not found)'],
      [['put', 'k', 'v', '--lease=1234'], 'Error: etcdserver: requested lease not found'],
      [['lease', 'keep-alive', '--once', '1234'], 'Error: etcdserver: requested lease not found'],
      [['member', 'remove', '99'], 'Error: etcdserver: member not found'],
    ];
    for (const [args, message] of cases) expect(lastLine((await etcdctl(args)).stderr), args.join(' ')).toBe(message);
    const big = await etcdctl(['put', 'big'], Buffer.alloc(1.6 * 1024 * 1024, 'a'));
    expect(lastLine(big.stderr)).toBe('Error: etcdserver: request is too large');
  });

  it('compacts, then refuses reads and compactions below it', async () => {
    await etcdctl(['put', 'cmp', '1']);
    await etcdctl(['put', 'cmp', '2']);
    const rev = h.api.store.revision;
    expect((await etcdctl(['compaction', String(rev - 1)])).stdout).toBe(`compacted revision ${rev - 1}\n`);
    const compacted = 'Error: etcdserver: mvcc: required revision has been compacted';
    expect(lastLine((await etcdctl(['get', 'cmp', `--rev=${rev - 2}`])).stderr)).toBe(compacted);
    expect(lastLine((await etcdctl(['compaction', String(rev - 2)])).stderr)).toBe(compacted);
  });

  it('lists members, reports status and health, lists alarms', async () => {
    expect((await etcdctl(['member', 'list'])).stdout).toBe('8e9e05c52164694d, started, fake, http://127.0.0.1:2380, , false\n');
    const status = JSON.parse((await etcdctl(['endpoint', 'status', '-w', 'json'])).stdout) as {
      Status: { version: string; leader: number; raftTerm: number; dbSize: number; header: { member_id: number } };
    }[];
    expect(status[0]!.Status.version).toBe('3.5.17');
    expect(status[0]!.Status.raftTerm).toBe(2);
    expect(status[0]!.Status.dbSize).toBe(20480);
    expect(status[0]!.Status.leader).toBe(status[0]!.Status.header.member_id);
    // etcdctl 3.4 prints the health line on stderr.
    expect((await etcdctl(['endpoint', 'health'])).stderr).toMatch(
      new RegExp(`^${h.endpoint} is healthy: successfully committed proposal: took = `),
    );
    const alarms = await etcdctl(['alarm', 'list']);
    expect(alarms).toMatchObject({ code: 0, stdout: '' });
  });

  it('saves a snapshot: the data, zero padding to 512, then its SHA-256', async () => {
    const file = path.join(dir, 'snap.db');
    const res = await etcdctl(['snapshot', 'save', file]);
    expect(res.stdout).toBe(`Snapshot saved at ${file}\n`);
    const saved = await readFile(file);
    expect(saved.length % 512).toBe(32);
    const data = saved.subarray(0, saved.length - 32);
    expect(Buffer.compare(data.subarray(0, h.api.snapshotBytes.length), Buffer.from(h.api.snapshotBytes))).toBe(0);
    expect(data.subarray(h.api.snapshotBytes.length).every((x) => x === 0)).toBe(true);
    expect(saved.subarray(saved.length - 32)).toEqual(createHash('sha256').update(data).digest());
  });

  it('serves per-endpoint calls to an http:// endpoint (schemed :authority repaired)', async () => {
    const status = await etcdctl(['endpoint', 'status'], undefined, h.url);
    expect(status.stdout).toBe(`${h.url}, 8e9e05c52164694d, 3.5.17, 20 kB, true, false, 2, ${status.stdout.split(', ')[7]}, ${status.stdout.split(', ')[8]}, \n`);
    expect((await etcdctl(['defrag'], undefined, h.url)).stdout).toBe(`Finished defragmenting etcd member[${h.url}]\n`);
    expect((await etcdctl(['endpoint', 'hashkv'], undefined, h.url)).stdout).toMatch(new RegExp(`^${h.url}, \\d+\n$`));
    expect((await etcdctl(['put', 'schemed', 'ok'], undefined, h.url)).stdout).toBe('OK\n');
  });

  it('defragments', async () => {
    expect((await etcdctl(['defrag'])).stdout).toBe(`Finished defragmenting etcd member[${h.endpoint}]\n`);
  });
});
