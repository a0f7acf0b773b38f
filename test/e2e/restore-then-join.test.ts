/**
 * O1 (issue 25, item 1): every path that builds a member from outside data (our snapshot, etcd's snapshot,
 * migrate --from-kine, migrate --from-etcd, --cluster-reset-restore-path), then two members join it with
 * `--server URL --token T`, then the restored member is killed. Every key must be on every member, HashKV
 * equal, and revisions must continue from the restored revision. Before the fix, the joiners replayed a log
 * that never held the data: they were voters at revision 1 with no keys, and after the kill the cluster
 * served an empty key space.
 */
import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { afterAll, describe, expect, it } from 'vitest';
import { KineFixture } from '../backup/kine-fixture.js';
import { etcdctl as etcdctlRef, haveEtcd, startEtcd } from '../backup/etcd-ref.js';
import { clientOf, closeClients, freePort, killAll, runCli, sleep, startServer, tempDir, waitFor, type ServerProcess } from './harness.js';
import { joinThenKillRestored } from './restore-join.js';

const keyCount = 2000;
const prefix = 'restored/';

afterAll(async () => {
  closeClients();
  await killAll();
}, 30_000);

async function fill(c: Etcd3): Promise<number> {
  for (let i = 0; i < keyCount; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => c.put(`${prefix}${String(i + j).padStart(5, '0')}`).value(`v${i + j}`)));
  }
  return Number((await c.kv.range({ key: Buffer.from(prefix) })).header.revision);
}

/** A member restored into `dataDir` under `name` with `peerPort` as its registered peer URL. */
function startRestored(name: string, dataDir: string, peerPort: number): Promise<ServerProcess> {
  return startServer({ name, dataDir, peerPort });
}

function clusterFlags(name: string, peerPort: number, token: string): string[] {
  const url = `http://127.0.0.1:${peerPort}`;
  return ['--name', name, '--initial-cluster', `${name}=${url}`, '--initial-advertise-peer-urls', url, '--initial-cluster-token', token];
}

describe('members that join a restored member receive its data (O1)', () => {
  it('our snapshot: snapshot save, snapshot restore, two joins, restored member killed', async () => {
    const src = await startServer({ name: 'src', args: ['--cluster-init'] });
    const revision = await fill(clientOf(src));
    const work = tempDir('rj-ours');
    const file = join(work, 'snap.db');
    expect((await runCli(['snapshot', 'save', file, '--endpoints', src.clientUrl], 60_000)).code).toBe(0);
    await src.kill();
    const peerPort = await freePort();
    const token = 'restored-ours';
    const out = await runCli(['snapshot', 'restore', file, '--data-dir', join(work, 'r'), ...clusterFlags('r', peerPort, token)], 60_000);
    expect(out.code).toBe(0);
    const r = await startRestored('r', join(work, 'r'), peerPort);
    await joinThenKillRestored(r, token, revision, prefix, keyCount);
  }, 240_000);

  it.skipIf(!haveEtcd)("etcd's snapshot and migrate --from-etcd: two joins, restored member killed", async () => {
    const etcd = await startEtcd();
    const work = tempDir('rj-etcd');
    const file = join(work, 'etcd.db');
    let revision: number;
    const migratedPeer = await freePort();
    try {
      const c = new Etcd3({ hosts: etcd.endpoint });
      revision = await fill(c);
      c.close();
      await etcdctlRef(['snapshot', 'save', file], etcd.endpoint);
      const out = await runCli(['migrate', '--from-etcd', etcd.endpoint, '--data-dir', join(work, 'm'), ...clusterFlags('m', migratedPeer, 'migrated')], 60_000);
      expect(out.code).toBe(0);
    } finally {
      await etcd.stop();
    }
    const peerPort = await freePort();
    const out = await runCli(['snapshot', 'restore', file, '--data-dir', join(work, 'r'), ...clusterFlags('r', peerPort, 'restored-etcd')], 60_000);
    expect(out.code).toBe(0);
    await joinThenKillRestored(await startRestored('r', join(work, 'r'), peerPort), 'restored-etcd', revision, prefix, keyCount);
    await joinThenKillRestored(await startRestored('m', join(work, 'm'), migratedPeer), 'migrated', revision, prefix, keyCount);
  }, 300_000);

  it('migrate --from-kine: two joins, restored member killed', async () => {
    const work = tempDir('rj-kine');
    const db = join(work, 'state.db');
    const k = new KineFixture(db);
    for (let i = 0; i < keyCount; i++) k.create(`${prefix}${String(i).padStart(5, '0')}`, `v${i}`);
    k.fill();
    const revision = k.update(`${prefix}00000`, 'v0 again');
    k.close();
    const peerPort = await freePort();
    const out = await runCli(['migrate', '--from-kine', db, '--data-dir', join(work, 'k'), ...clusterFlags('k', peerPort, 'from-kine')], 60_000);
    expect(out.code).toBe(0);
    await joinThenKillRestored(await startRestored('k', join(work, 'k'), peerPort), 'from-kine', revision, prefix, keyCount);
  }, 240_000);

  it('--cluster-reset-restore-path: two joins, restored member killed', async () => {
    const token = 'reset-restore';
    const a = await startServer({ name: 'z', args: ['--cluster-init', '--token', token, '--snapshot-schedule', '* * * * * *'] });
    const revision = await fill(clientOf(a));
    const writtenSeconds = Math.ceil(Date.now() / 1000);
    const dir = join(a.dataDir, 'snapshots');
    const name = await waitFor('a snapshot taken after the writes', async () =>
      readdirSync(dir).find((n) => Number(/^etcd-snapshot-z-(\d+)$/.exec(n)?.[1] ?? 0) > writtenSeconds), 30_000);
    const saved = join(tempDir('rj-reset'), name);
    copyFileSync(join(dir, name), saved);
    await a.kill('SIGKILL');
    const reset = await startServer({
      name: 'z', dataDir: a.dataDir, clientPort: a.clientPort, peerPort: a.peerPort,
      args: ['--cluster-reset', '--cluster-reset-restore-path', saved, '--token', token], waitReady: false,
    });
    expect(await Promise.race([reset.exited, sleep(60_000).then(() => 'still running')])).toBe(0);
    const r = await startServer({ name: 'z', dataDir: a.dataDir, clientPort: a.clientPort, peerPort: a.peerPort });
    await joinThenKillRestored(r, token, revision, prefix, keyCount);
  }, 240_000);
});
