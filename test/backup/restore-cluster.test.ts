/**
 * Restore one snapshot as a new three-member cluster (as `etcdctl snapshot restore` is used for disaster
 * recovery): save from a single member with `etcetera snapshot save`, restore three data dirs with the same
 * --initial-cluster, start them with nothing but their data dir and listen URLs: one cluster of three,
 * every member serving the snapshot's keys and revision, and new writes replicated. Maintenance.Snapshot
 * leaves no temp file behind in the data dir.
 */
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Etcd3 } from 'etcd3';
import { afterAll, describe, expect, it } from 'vitest';
import { cliPath, freePort, killAll, removeDir, startServer, tempDir, waitFor, waitReady } from '../e2e/harness.js';

const execFileP = promisify(execFile);
const dirs: string[] = [];
afterAll(async () => {
  await killAll();
  for (const d of dirs) removeDir(d);
}, 30_000);

describe('snapshot restore as a new multi-member cluster', () => {
  it('three members restored from one snapshot form one cluster serving its data', async () => {
    const src = await startServer({ name: 'src', args: ['--cluster-init'] });
    dirs.push(src.dataDir);
    const c = new Etcd3({ hosts: src.clientUrl });
    for (let i = 0; i < 50; i++) await c.put(`r/${i}`).value(`v${i}`);
    const revision = Number((await c.kv.range({ key: Buffer.from('r/0') })).header.revision);
    c.close();
    const work = tempDir('restore3');
    dirs.push(work);
    const file = join(work, 'snap.db');
    await execFileP(process.execPath, [cliPath, 'snapshot', 'save', file, '--endpoints', src.clientUrl], { timeout: 60_000 });
    expect((await readdir(join(src.dataDir, 'member/snap'))).filter((n) => n.includes('maintenance'))).toEqual([]);
    await src.kill();

    const names = ['m1', 'm2', 'm3'];
    const peerPorts = await Promise.all(names.map(() => freePort()));
    const initialCluster = names.map((n, i) => `${n}=http://127.0.0.1:${peerPorts[i]}`).join(',');
    for (const [i, name] of names.entries()) {
      await execFileP(process.execPath, [
        cliPath, 'snapshot', 'restore', file, '--data-dir', join(work, name), '--name', name,
        '--initial-cluster', initialCluster, '--initial-cluster-token', 'restored', '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPorts[i]}`,
      ], { timeout: 60_000 });
    }
    const members = await Promise.all(names.map((name, i) => startServer({ name, dataDir: join(work, name), peerPort: peerPorts[i]!, waitReady: false })));
    await Promise.all(members.map((m) => waitReady(m, 60_000)));
    await waitFor('a leader', async () => {
      const probe = new Etcd3({ hosts: members[0]!.clientUrl });
      try {
        const status = await probe.maintenance.status({}).catch(() => undefined);
        return status !== undefined && status.leader !== '0' ? true : undefined;
      } finally {
        probe.close();
      }
    }, 60_000);
    const clients = members.map((m) => new Etcd3({ hosts: m.clientUrl }));
    try {
      const list = await clients[0]!.cluster.memberList({});
      expect(list.members.map((m) => m.name).sort()).toEqual(names);
      const ids = new Set(await Promise.all(clients.map(async (cl) => (await cl.cluster.memberList({})).header.cluster_id)));
      expect(ids.size).toBe(1);
      await clients[1]!.put('after').value('restore');
      for (const cl of clients) {
        await waitFor('the write everywhere', async () => ((await cl.get('after').string()) === 'restore' ? true : undefined), 30_000);
        const r = await cl.kv.range({ key: Buffer.from('r/'), range_end: Buffer.from('r0') });
        expect(r.kvs.length).toBe(50);
        expect(Number(r.header.revision)).toBe(revision + 1);
      }
    } finally {
      for (const cl of clients) cl.close();
    }
  }, 240_000);
});
