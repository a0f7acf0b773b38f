/**
 * `etcetera migrate --from-kine state.db --data-dir D`, then `etcetera server` on D: the same keys, values,
 * create and mod revisions as kine served them, deleted keys gone, the compaction kept, leases of their TTL,
 * and new writes continue above the source's revision (issue 11).
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, closeClients, killAll, runCli, startServer, tempDir } from './harness.js';
import { KineFixture } from '../backup/kine-fixture.js';

afterAll(async () => {
  closeClients();
  await killAll();
});


describe('migrate --from-kine', () => {
  it('serves what kine served, at the same revisions, and continues above them', async () => {
    const work = tempDir('kine');
    const db = join(work, 'state.db');
    const k = new KineFixture(db); // 1: compact_rev_key
    const created = new Map<string, number>();
    for (let i = 0; i < 30; i++) created.set(`/registry/pods/default/p${i}`, k.create(`/registry/pods/default/p${i}`, `{"pod":${i}}`));
    const rev = new Map<string, number>();
    for (let i = 0; i < 30; i += 3) rev.set(`/registry/pods/default/p${i}`, k.update(`/registry/pods/default/p${i}`, `{"pod":${i},"v":2}`));
    k.compact(35);
    for (let i = 0; i < 30; i += 5) k.delete(`/registry/pods/default/p${i}`);
    k.fill();
    const eventRev = k.create('/registry/events/default/e1', '{"event":1}', 3600);
    const lastRev = k.update('/registry/pods/default/p1', '{"pod":1,"v":2}');
    rev.set('/registry/pods/default/p1', lastRev);
    k.close();

    const dataDir = join(work, 'data');
    const m = await runCli(['migrate', '--from-kine', db, '--data-dir', dataDir, '--name', 'mk']);
    expect(m.stderr + m.stdout).toContain(`kine database ${db}: revision ${lastRev}, compacted at 35`);
    expect(m.code).toBe(0);
    const again = await runCli(['migrate', '--from-kine', db, '--data-dir', dataDir, '--name', 'mk']);
    expect(again.code).toBe(1); // never over an existing member

    const sp = await startServer({ name: 'mk', dataDir });
    const c = clientOf(sp);
    const pods = await c.getAll().prefix('/registry/pods/').exec();
    expect(pods.kvs.length).toBe(30 - 6);
    expect(Number(pods.header.revision)).toBeGreaterThanOrEqual(lastRev);
    for (const kv of pods.kvs) {
      const key = kv.key.toString();
      const i = Number(key.slice(key.lastIndexOf('p') + 1));
      expect(i % 5).not.toBe(0);
      expect(Number(kv.create_revision)).toBe(created.get(key));
      expect(Number(kv.mod_revision)).toBe(rev.get(key) ?? created.get(key));
      expect(kv.value.toString()).toBe(rev.has(key) ? `{"pod":${i},"v":2}` : `{"pod":${i}}`);
    }
    const event = (await c.get('/registry/events/default/e1').exec()).kvs[0]!;
    expect(Number(event.mod_revision)).toBe(eventRev);
    expect(event.lease).toBe('3600');
    // kine's lease id is its TTL: the lease exists with that TTL.
    expect((await c.leaseClient.leaseLeases()).leases.map((l) => l.ID)).toEqual(['3600']);
    expect((await c.leaseClient.leaseTimeToLive({ ID: '3600' })).grantedTTL).toBe('3600');
    // kine's compaction holds: history before it is gone, after it is readable.
    await expect(c.get('/registry/pods/default/p3').revision(10).exec()).rejects.toThrow(/compacted/);
    expect((await c.get('/registry/pods/default/p3').revision(36).exec()).kvs[0]!.value.toString()).toBe('{"pod":3,"v":2}');
    const put = await c.put('/registry/new').value('x').exec();
    expect(Number(put.header.revision)).toBe(lastRev + 1);
  }, 90_000);
});
