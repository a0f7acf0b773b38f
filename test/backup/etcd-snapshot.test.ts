/**
 * Snapshots in etcd's own format, against the real etcd 3.4 and etcdctl:
 *   our server → `etcdctl snapshot save` → `etcdctl snapshot status` (right revision and key count, same as
 *   `etcetera snapshot status`) → `etcdctl snapshot restore` → real etcd serves the same keys, revisions
 *   (current and historical), compaction and lease ids;
 *   real etcd → `etcdctl snapshot save` → `etcetera snapshot restore` → we serve the same; and
 *   `etcetera migrate --from-etcd` from the live etcd, and `etcetera snapshot save` from our server.
 * The workload has a compacted history, overwrites, a delete, a leased key, a key written twice in one txn, and
 * ends with a NOSPACE alarm, which survives every restore (etcdctl's keeps the alarm bucket).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Etcd3 } from 'etcd3';
import { afterAll, describe, expect, it } from 'vitest';
import { cliPath, freePort, killAll, startServer } from '../e2e/harness.js';
import { etcdctl, haveEtcd, startEtcd } from './etcd-ref.js';

const execFileP = promisify(execFile);
const dirs: string[] = [];
afterAll(async () => {
  await killAll();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
}, 30_000);

async function temp(prefix: string): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), `etcetera-${prefix}-`));
  dirs.push(d);
  return d;
}

async function etcetera(args: string[]): Promise<{ stdout: string; stderr: string }> {
  try {
    return await execFileP(process.execPath, [cliPath, ...args], { timeout: 120_000 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`etcetera ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

interface Dump {
  revision: string;
  kvs: string[];
  /** Every key as of an older, uncompacted revision. */
  history: string[];
  leases: string[];
  compactedRangeError: string;
  /** Raised alarms (member ids of the source: a restore keeps them), and what a write gets meanwhile. */
  alarms: string[];
  putError: string;
}

/** The workload: returns the revision compacted at and one between it and the end. */
async function workload(c: Etcd3): Promise<{ compactRev: number; midRev: number }> {
  const lease = await c.leaseClient.leaseGrant({ TTL: 3600 });
  for (let i = 0; i < 300; i++) await c.kv.put({ key: Buffer.from(`k/${i % 120}`), value: Buffer.from(`v${i}-${'x'.repeat(i % 50)}`) });
  const compactRev = Number((await c.kv.put({ key: Buffer.from('k/mark'), value: Buffer.from('m') })).header.revision);
  await c.kv.compact({ revision: String(compactRev), physical: true });
  await c.kv.put({ key: Buffer.from('leased'), value: Buffer.from('with a lease'), lease: lease.ID });
  await c.kv.put({ key: Buffer.from('big'), value: Buffer.alloc(20_000, 'b') });
  const midRev = Number((await c.kv.put({ key: Buffer.from('k/1'), value: Buffer.from('after compaction') })).header.revision);
  await c.kv.deleteRange({ key: Buffer.from('k/2') });
  await c.kv.txn({
    compare: [],
    success: [
      { request_put: { key: Buffer.from('t/a'), value: Buffer.from('1') } },
      { request_put: { key: Buffer.from('t/b'), value: Buffer.from('2') } },
    ],
    failure: [],
  });
  await c.kv.put({ key: Buffer.from('k/1'), value: Buffer.from('latest') });
  // Last, since it stops writes: a NOSPACE alarm, which etcdctl's restore keeps (and so must ours).
  const memberID = (await c.maintenance.status()).header.member_id;
  await c.maintenance.alarm({ action: 'Activate', memberID, alarm: 'Nospace' });
  return { compactRev, midRev };
}

const kvLine = (kv: { key: Buffer; value: Buffer; create_revision: string; mod_revision: string; version: string; lease: string }): string =>
  `${kv.key.toString()}=${kv.value.length}:${kv.value.toString().slice(0, 40)} c${kv.create_revision} m${kv.mod_revision} v${kv.version} l${kv.lease}`;

async function dump(endpoint: string, at: { compactRev: number; midRev: number }): Promise<Dump> {
  const c = new Etcd3({ hosts: endpoint });
  try {
    const all = await c.kv.range({ key: Buffer.from([0]), range_end: Buffer.from([0]) });
    const old = await c.kv.range({ key: Buffer.from([0]), range_end: Buffer.from([0]), revision: String(at.midRev) });
    const compacted = await c.kv.range({ key: Buffer.from([0]), range_end: Buffer.from([0]), revision: String(at.compactRev - 1) }).then(
      () => 'no error',
      (err: Error) => err.message,
    );
    const alarms = (await c.maintenance.alarm({ action: 'Get', memberID: '0', alarm: 'None' })).alarms.map((a) => `${a.memberID} ${a.alarm}`);
    const leases = await c.leaseClient.leaseLeases({});
    const ttls = await Promise.all(leases.leases.map((l) => c.leaseClient.leaseTimeToLive({ ID: l.ID, keys: true })));
    // Last, on a client of its own: the etcd3 client opens its circuit breaker on the refusal.
    const writer = new Etcd3({ hosts: endpoint });
    const putError = await writer.kv.put({ key: Buffer.from('after-alarm'), value: Buffer.from('x') }).then(() => 'no error', (err: Error) => err.message);
    writer.close();
    return {
      revision: all.header.revision,
      kvs: all.kvs.map(kvLine),
      history: old.kvs.map(kvLine),
      leases: ttls.map((t) => `${t.ID} granted ${t.grantedTTL} alive ${Number(t.TTL) > 3000} keys ${t.keys.map((k) => k.toString()).join(',')}`),
      compactedRangeError: /compacted/.test(compacted) ? 'compacted' : compacted,
      alarms,
      putError: /database space exceeded/.test(putError) ? 'database space exceeded' : putError,
    };
  } finally {
    c.close();
  }
}

describe.skipIf(!haveEtcd)('etcd-format snapshots with the real etcd 3.4 and etcdctl', () => {
  it('our snapshot: etcdctl status shows our revision and keys; etcdctl restore + etcd serve the same data', async () => {
    const ours = await startServer({ name: 'snapsrc', args: ['--cluster-init'] });
    const client = new Etcd3({ hosts: ours.clientUrl });
    const at = await workload(client);
    client.close();
    const expected = await dump(ours.clientUrl, at);
    // The dump is not vacuous: live keys, an older revision's view, the lease with its key, the compaction.
    expect(expected.kvs.length).toBe(124); // k/0..119 without k/2, k/mark, leased, big, t/a, t/b
    expect(expected.history).not.toEqual(expected.kvs);
    expect(expected.leases).toEqual([expect.stringMatching(/granted 3600 alive true keys leased$/)]);
    expect(expected.compactedRangeError).toBe('compacted');
    expect(expected.alarms).toEqual([expect.stringMatching(/^\d+ Nospace$/)]);
    expect(expected.putError).toBe('database space exceeded');
    const dir = await temp('snap-ours');
    const file = join(dir, 'ours.db');
    const saved = await etcdctl(['--command-timeout=60s', 'snapshot', 'save', file], `127.0.0.1:${ours.clientPort}`);
    expect(saved.stdout).toContain('Snapshot saved');

    const status = JSON.parse((await etcdctl(['snapshot', 'status', file, '-w', 'json'])).stdout) as { hash: number; revision: number; totalKey: number; totalSize: number };
    expect(String(status.revision)).toBe(expected.revision);
    const ourStatus = JSON.parse((await etcetera(['snapshot', 'status', file, '-w', 'json'])).stdout) as typeof status;
    expect(ourStatus).toEqual(status);
    const table = (await etcetera(['snapshot', 'status', file, '-w', 'table'])).stdout;
    expect(table).toBe((await etcdctl(['snapshot', 'status', file, '-w', 'table'])).stdout);

    // `etcetera snapshot save` writes the same kind of file, which etcdctl accepts too.
    const file2 = join(dir, 'ours-by-etcetera.db');
    expect((await etcetera(['snapshot', 'save', file2, '--endpoints', ours.clientUrl])).stdout).toContain('Snapshot saved');
    expect(JSON.parse((await etcdctl(['snapshot', 'status', file2, '-w', 'json'])).stdout).revision).toBe(status.revision);
    await ours.kill();

    const peerPort = await freePort();
    const restored = join(dir, 'etcd-data');
    await etcdctl([
      'snapshot', 'restore', file, '--data-dir', restored, '--name', 'ref',
      '--initial-cluster', `ref=http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
    ]);
    const etcd = await startEtcd({ name: 'ref', dataDir: restored, peerPort });
    try {
      expect(await dump(etcd.endpoint, at)).toEqual(expected);
    } finally {
      await etcd.stop();
    }
  }, 240_000);

  it("etcd's snapshot: etcetera snapshot restore (and migrate --from-etcd) serve the same data", async () => {
    const etcd = await startEtcd();
    const dir = await temp('snap-etcd');
    let at: { compactRev: number; midRev: number };
    let expected: Dump;
    const file = join(dir, 'etcd.db');
    const migrated = join(dir, 'migrated');
    try {
      const client = new Etcd3({ hosts: etcd.endpoint });
      at = await workload(client);
      client.close();
      expected = await dump(etcd.endpoint, at);
      await etcdctl(['snapshot', 'save', file], etcd.endpoint);
      const status = JSON.parse((await etcdctl(['snapshot', 'status', file, '-w', 'json'])).stdout) as unknown;
      expect(JSON.parse((await etcetera(['snapshot', 'status', file, '-w', 'json'])).stdout)).toEqual(status);
      const peerPort = await freePort();
      const out = await etcetera([
        'migrate', '--from-etcd', etcd.endpoint, '--data-dir', migrated, '--name', 'mig',
        '--initial-cluster', `mig=http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
      ]);
      expect(out.stdout).toContain(`revision ${expected.revision}`);
    } finally {
      await etcd.stop();
      await rm(etcd.dataDir, { recursive: true, force: true });
    }

    const peerPort = await freePort();
    const restored = join(dir, 'ours');
    const out = await etcetera([
      'snapshot', 'restore', file, '--data-dir', restored, '--name', 'back',
      '--initial-cluster', `back=http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
    ]);
    expect(out.stdout).toContain(`restored snapshot: revision ${expected.revision}`);
    const back = await startServer({ name: 'back', dataDir: restored, peerPort });
    try {
      expect(await dump(back.clientUrl, at)).toEqual(expected);
    } finally {
      await back.kill('SIGTERM');
    }
    // A second restore into the same directory is refused, as etcdctl does.
    await expect(etcetera(['snapshot', 'restore', file, '--data-dir', restored])).rejects.toThrow(/exists/);
  }, 240_000);
});
