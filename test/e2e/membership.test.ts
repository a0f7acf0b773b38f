/**
 * Membership under load with real processes: grow 1 → 3 (k3s joins: learner, then promoted), then shrink
 * 3 → 1 by removing members through the Cluster API; removed members stop and say why; no acknowledged write
 * is lost along the way. Also etcd's static bootstrap with --initial-cluster.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { freePort, killAll, sleep, startServer, waitFor, waitForVoters, type ServerProcess } from './harness.js';

const clients: Etcd3[] = [];
function client(sp: ServerProcess): Etcd3 {
  const c = new Etcd3({ hosts: sp.clientUrl, dialTimeout: 2000 });
  clients.push(c);
  return c;
}

afterAll(async () => {
  for (const c of clients) c.close();
  await killAll();
});

async function voters(c: Etcd3): Promise<{ id: string; name: string; isLearner: boolean }[]> {
  const r = await c.cluster.memberList({ linearizable: true } as never);
  return r.members.map((m) => ({ id: m.ID, name: m.name, isLearner: m.isLearner }));
}

describe('membership changes under load', () => {
  it('grows 1 → 3 and shrinks back to 1 without losing an acknowledged write', async () => {
    const token = 'grow-shrink';
    const a = await startServer({ name: 'a', args: ['--cluster-init', '--token', token] });
    const ca = client(a);
    const acked: string[] = [];
    let stop = false;
    const writer = (async () => {
      for (let n = 0; !stop; n++) {
        try {
          await ca.put(`gs/${n}`).value('v');
          acked.push(`gs/${n}`);
        } catch {
          await sleep(20);
        }
      }
    })();
    await sleep(300);
    const b = await startServer({ name: 'b', args: ['--server', a.peerUrl, '--token', token] });
    const c = await startServer({ name: 'c', args: ['--server', a.peerUrl, '--token', token] });
    await waitForVoters(ca, 3, { what: 'three voters', timeoutMs: 30_000 });
    // Shrink: remove c, then b, through a.
    for (const gone of [c, b]) {
      const v = await voters(ca);
      const id = v.find((m) => m.name === gone.name)!.id;
      await ca.cluster.memberRemove({ ID: id });
      const exit = await Promise.race([gone.exited, sleep(15_000).then(() => 'still running')]);
      expect(exit).toBe(0);
      expect(gone.output.join('\n')).toMatch(/removed from the cluster/);
    }
    expect((await voters(ca)).map((m) => m.name)).toEqual(['a']);
    await sleep(300);
    stop = true;
    await writer;
    expect(acked.length).toBeGreaterThan(30);
    const got = new Set(await ca.getAll().prefix('gs/').keys());
    expect(acked.filter((k) => !got.has(k))).toEqual([]);
  }, 120_000);

  it('refuses a removal that would leave fewer started voters than a quorum (strict reconfig check)', async () => {
    const token = 'strict';
    const a = await startServer({ name: 'sa', args: ['--cluster-init', '--token', token] });
    const b = await startServer({ name: 'sb', args: ['--server', a.peerUrl, '--token', token] });
    const c = await startServer({ name: 'sc', args: ['--server', a.peerUrl, '--token', token] });
    const ca = client(a);
    await waitForVoters(ca, 3, { what: 'three voters', timeoutMs: 30_000 });
    await c.kill('SIGKILL');
    await sleep(2500); // c is no longer recently active (one election timeout)
    const bId = (await voters(ca)).find((m) => m.name === 'sb')!.id;
    // {sa, sb, sc} without sb is {sa, sc}, and sc is down: one started voter of two is not a quorum.
    await expect(ca.cluster.memberRemove({ ID: bId })).rejects.toThrow('etcdserver: re-configuration failed due to not enough started members');
    expect((await voters(ca)).length).toBe(3);
    void b;
  }, 90_000);

  it('catches a joining member up by snapshot when the log it needs was compacted', async () => {
    const token = 'snap-join';
    const a = await startServer({ name: 'na', args: ['--cluster-init', '--token', token, '--snapshot-count', '50'] });
    const ca = client(a);
    for (let i = 0; i < 300; i++) await ca.put(`snap/${i}`).value(`v${i}`);
    const b = await startServer({ name: 'nb', args: ['--server', a.peerUrl, '--token', token, '--snapshot-count', '50'] });
    const cb = client(b);
    await waitFor('b caught up', async () => ((await cb.getAll().prefix('snap/').count()) === 300 ? true : undefined), 30_000);
    expect(b.output.join('\n')).toContain('restoring from snapshot');
    await waitForVoters(ca, 2, { what: 'b promoted', timeoutMs: 30_000 });
    await cb.put('after').value('snapshot');
    expect(await ca.get('after').string()).toBe('snapshot');
  }, 90_000);

  it('refuses to promote an unknown member and to remove one that does not exist', async () => {
    const a = await startServer({ name: 'solo', args: ['--cluster-init'] });
    const ca = client(a);
    await expect(ca.cluster.memberPromote({ ID: '12345' })).rejects.toThrow(/member not found/);
    await expect(ca.cluster.memberRemove({ ID: '12345' })).rejects.toThrow(/member not found/);
  }, 60_000);
});

describe("etcd's static bootstrap", () => {
  it('forms a cluster from --initial-cluster and restarts from its data directories', async () => {
    const names = ['s1', 's2', 's3'];
    const peers = await Promise.all(names.map(() => freePort()));
    const clientsPorts = await Promise.all(names.map(() => freePort()));
    const initial = names.map((n, i) => `${n}=http://127.0.0.1:${peers[i]}`).join(',');
    const args = ['--initial-cluster', initial, '--initial-cluster-state', 'new', '--initial-cluster-token', 'static-test'];
    const ms = await Promise.all(names.map((name, i) => startServer({ name, peerPort: peers[i]!, clientPort: clientsPorts[i]!, args })));
    const c0 = client(ms[0]!);
    await waitFor('a leader', async () => ((await c0.maintenance.status()).leader !== '0' ? true : undefined));
    await c0.put('static').value('yes');
    const v = await voters(c0);
    expect(v.map((m) => m.name).sort()).toEqual(names);
    // Restart one member with the same command line: it resumes from its data directory.
    await ms[1]!.kill('SIGTERM');
    const again = await startServer({ name: 's2', dataDir: ms[1]!.dataDir, peerPort: peers[1]!, clientPort: clientsPorts[1]!, args });
    const c1 = client(again);
    expect(await waitFor('the value on the restarted member', async () => (await c1.get('static').string()) ?? undefined)).toBe('yes');
  }, 90_000);
});
