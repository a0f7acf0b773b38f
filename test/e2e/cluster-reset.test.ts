/**
 * Disaster recovery with real processes (issue 11): a 3-member cluster loses two members for good (kill -9,
 * data gone); `--force-new-cluster` on the survivor serves every acknowledged write as a single-member cluster
 * with the same cluster id; the two wiped members rejoin with `--server`; all three hold every acknowledged
 * write. And k3s's `--cluster-reset`: resets, exits with k3s's message, and a restart without it serves.
 */
import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Etcd3 } from 'etcd3';
import { clientOf as client, closeClients, killAll, memberList as members, removeDir, sleep, startServer, tempDir, waitFor, waitForVoters } from './harness.js';

afterAll(async () => {
  closeClients();
  await killAll();
});

async function threeVoters(c: Etcd3): Promise<void> {
  await waitForVoters(c, 3, { what: 'three voters', timeoutMs: 40_000 });
}

/** Writes until stopped, recording the keys whose put was acknowledged. */
function writer(c: Etcd3, prefix: string): { acked: string[]; stop(): Promise<void> } {
  const acked: string[] = [];
  let stopped = false;
  const loop = (async () => {
    for (let n = 0; !stopped; n++) {
      try {
        await c.put(`${prefix}${n}`).value(`v${n}`);
        acked.push(`${prefix}${n}`);
      } catch {
        await sleep(20);
      }
    }
  })();
  return {
    acked,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

async function missing(c: Etcd3, prefix: string, acked: string[]): Promise<string[]> {
  const got = new Set(await c.getAll().prefix(prefix).keys());
  return acked.filter((k) => !got.has(k));
}

async function clusterIdOf(c: Etcd3): Promise<string> {
  return (await c.maintenance.status()).header.cluster_id;
}

describe('--force-new-cluster after losing quorum for good', () => {
  it('serves every acknowledged write as a single member, then two wiped members rejoin with --server', async () => {
    const token = 'lost-quorum';
    const a = await startServer({ name: 'ra', args: ['--cluster-init', '--token', token] });
    const b = await startServer({ name: 'rb', args: ['--server', a.peerUrl, '--token', token] });
    const c = await startServer({ name: 'rc', args: ['--server', a.peerUrl, '--token', token] });
    const ca = client(a);
    await threeVoters(ca);
    const clusterId = await clusterIdOf(ca);
    const idA = (await members(ca)).find((m) => m.name === 'ra')!.id;

    // Acknowledged writes through every member while they all live.
    const writers = [writer(ca, 'fnc/a/'), writer(client(b), 'fnc/b/'), writer(client(c), 'fnc/c/')];
    await sleep(1500);
    // Lose b and c for good, mid-traffic.
    await Promise.all([b.kill('SIGKILL'), c.kill('SIGKILL')]);
    for (const w of writers) await w.stop();
    const acked = writers.flatMap((w) => w.acked);
    expect(acked.length).toBeGreaterThan(30);
    removeDir(b.dataDir);
    removeDir(c.dataDir);
    // The survivor alone has no quorum: no write can succeed.
    await expect(ca.put('fnc/no-quorum').value('x')).rejects.toThrow();
    await a.kill('SIGKILL');

    const a2 = await startServer({
      name: 'ra', dataDir: a.dataDir, clientPort: a.clientPort, peerPort: a.peerPort, args: ['--force-new-cluster', '--token', token],
    });
    const ca2 = client(a2);
    await waitFor('a leader', async () => ((await ca2.maintenance.status()).leader !== '0' ? true : undefined), 20_000);
    const alone = await members(ca2);
    expect(alone.map((m) => m.id)).toEqual([idA]);
    expect(await clusterIdOf(ca2)).toBe(clusterId);
    expect(await missing(ca2, 'fnc/', acked)).toEqual([]);
    await ca2.put('fnc/after-reset').value('ok');
    expect(a2.output.join('\n')).toContain('this member is now the only member of its cluster');

    // The wiped members rejoin under new ids, on the same addresses.
    const b2 = await startServer({ name: 'rb', clientPort: b.clientPort, peerPort: b.peerPort, args: ['--server', a2.peerUrl, '--token', token] });
    const c2 = await startServer({ name: 'rc', clientPort: c.clientPort, peerPort: c.peerPort, args: ['--server', a2.peerUrl, '--token', token] });
    await threeVoters(ca2);
    const all = [...acked, 'fnc/after-reset'];
    for (const sp of [a2, b2, c2]) {
      const cl = client(sp);
      await waitFor(`${sp.name} caught up`, async () => ((await missing(cl, 'fnc/', all)).length === 0 ? true : undefined), 30_000);
    }
    // A restart without the flag keeps the new configuration.
    await a2.kill('SIGTERM');
    const a3 = await startServer({ name: 'ra', dataDir: a.dataDir, clientPort: a.clientPort, peerPort: a.peerPort, args: ['--token', token] });
    const ca3 = client(a3);
    await waitFor('a leader after restart', async () => ((await ca3.maintenance.status()).leader !== '0' ? true : undefined), 20_000);
    expect((await members(ca3)).length).toBe(3);
    expect(await missing(ca3, 'fnc/', all)).toEqual([]);
  }, 240_000);
});

describe("k3s's --cluster-reset", () => {
  it('resets, exits with the message to restart without the flag, and the restart serves', async () => {
    const token = 'k3s-reset';
    const a = await startServer({ name: 'ka', args: ['--cluster-init', '--token', token] });
    const b = await startServer({ name: 'kb', args: ['--server', a.peerUrl, '--token', token] });
    const ca = client(a);
    await waitForVoters(ca, 2, { what: 'two voters', timeoutMs: 40_000 });
    for (let i = 0; i < 50; i++) await ca.put(`k3s/${i}`).value(`v${i}`);
    await Promise.all([a.kill('SIGKILL'), b.kill('SIGKILL')]);
    removeDir(b.dataDir);

    const reset = await startServer({ name: 'ka', dataDir: a.dataDir, args: ['--cluster-reset', '--token', token], waitReady: false });
    const code = await Promise.race([reset.exited, sleep(60_000).then(() => 'still running')]);
    expect(code).toBe(0);
    expect(reset.output.join('\n')).toContain('Managed etcd cluster membership has been reset, restart without --cluster-reset flag now');

    const again = await startServer({ name: 'ka', dataDir: a.dataDir, args: ['--token', token] });
    const c2 = client(again);
    await waitFor('a leader', async () => ((await c2.maintenance.status()).leader !== '0' ? true : undefined), 20_000);
    expect((await members(c2)).map((m) => m.name)).toEqual(['ka']);
    expect(await c2.getAll().prefix('k3s/').count()).toBe(50);
    await c2.put('k3s/after').value('ok');
  }, 180_000);

  it('--cluster-reset-restore-path restores a scheduled (gzipped) snapshot first; the restart serves its data', async () => {
    const token = 'k3s-restore';
    const a = await startServer({ name: 'kz', args: ['--cluster-init', '--token', token, '--snapshot-schedule', '* * * * * *', '--snapshot-compress'] });
    const ca = client(a);
    for (let i = 0; i < 40; i++) await ca.put(`snap/${i}`).value(`v${i}`);
    const writtenSeconds = Math.ceil(Date.now() / 1000);
    const dir = join(a.dataDir, 'snapshots');
    const name = await waitFor('a snapshot taken after the writes', async () =>
      readdirSync(dir).find((n) => Number(/^etcd-snapshot-kz-(\d+)\.gz$/.exec(n)?.[1] ?? 0) > writtenSeconds), 20_000);
    const saved = join(tempDir('restore-src'), name);
    copyFileSync(join(dir, name), saved);
    for (let i = 0; i < 10; i++) await ca.put(`later/${i}`).value('not in the snapshot');
    await a.kill('SIGKILL');

    const reset = await startServer({
      name: 'kz', dataDir: a.dataDir, clientPort: a.clientPort, peerPort: a.peerPort,
      args: ['--cluster-reset', '--cluster-reset-restore-path', saved, '--token', token], waitReady: false,
    });
    const code = await Promise.race([reset.exited, sleep(60_000).then(() => 'still running')]);
    expect(code).toBe(0);
    expect(reset.output.join('\n')).toContain('restart without --cluster-reset flag now');
    expect(readdirSync(a.dataDir).some((n) => /^member-old-\d+$/.test(n))).toBe(true);

    const again = await startServer({ name: 'kz', dataDir: a.dataDir, clientPort: a.clientPort, peerPort: a.peerPort, args: ['--token', token] });
    const c2 = client(again);
    await waitFor('a leader', async () => ((await c2.maintenance.status()).leader !== '0' ? true : undefined), 20_000);
    expect((await members(c2)).map((m) => m.name)).toEqual(['kz']);
    expect(await c2.getAll().prefix('snap/').count()).toBe(40);
    expect(await c2.getAll().prefix('later/').count()).toBe(0);
    await c2.put('snap/after').value('ok');
  }, 180_000);

  it('refuses --cluster-reset-restore-path without --cluster-reset, as k3s does', async () => {
    const sp = await startServer({ name: 'kr', args: ['--cluster-reset-restore-path', '/nonexistent'], waitReady: false });
    expect(await sp.exited).toBe(2);
    expect(sp.output.join('\n')).toContain('invalid flag use; --cluster-reset required with --cluster-reset-restore-path');
  }, 30_000);
});
