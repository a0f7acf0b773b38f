/**
 * The backend quota measures the store's real size on disk, which compaction and defragmentation bring down,
 * as etcd users expect: rewriting a compacted key never fills it, and a store full of live history is made
 * writable again by compact + defrag + alarm disarm (etcd's documented recovery from NOSPACE).
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { AlarmAction, AlarmType } from 'etcd3/lib/rpc.js';
import { startEtcetera, type Etcetera } from '../../src/index.js';
import { freePort, removeDir, tempDir } from './harness.js';

const quotaBytes = 8 * 1024 * 1024;
const noSpace = /database space exceeded/;

async function start(dir: string): Promise<{ member: Etcetera; client: Etcd3 }> {
  const [c, p] = [await freePort(), await freePort()];
  const member = await startEtcetera({
    name: 'quota', dataDir: dir, storageProfile: 'ssd', quotaBackendBytes: quotaBytes,
    listenClientUrls: [`http://127.0.0.1:${c}`], listenPeerUrls: [`http://127.0.0.1:${p}`],
  });
  return { member, client: new Etcd3({ hosts: member.clientUrls[0]! }) };
}

describe('backend quota (NOSPACE)', () => {
  let member: Etcetera | undefined;
  let client: Etcd3 | undefined;
  let dir: string | undefined;

  afterEach(async () => {
    client?.close();
    await member?.close();
    if (dir) removeDir(dir);
    member = client = dir = undefined;
  });

  it('never fills by rewriting one key with compaction (3× the quota written)', async () => {
    dir = tempDir('quota-rewrite');
    ({ member, client } = await start(dir));
    const value = randomBytes(128 * 1024);
    const writes = (3 * quotaBytes) / value.length;
    for (let i = 1; i <= writes; i++) {
      const put = await client.put('the-one-key').value(value).exec();
      if (i % 8 === 0) await client.kv.compact({ revision: put.header.revision, physical: true });
    }
    const status = await client.maintenance.status();
    // Below the 95% at which etcdBackendQuotaLowSpace alerts: the store reclaims in the background.
    expect(Number(status.dbSize)).toBeLessThan(quotaBytes * 0.8);
    expect((await client.maintenance.alarm({ action: AlarmAction.Get, memberID: 0, alarm: AlarmType.None })).alarms).toEqual([]);
  }, 120_000);

  it('fills with live history; compact + defrag + disarm make it writable again', async () => {
    dir = tempDir('quota-fill');
    ({ member, client } = await start(dir));
    // The etcd3 client opens its circuit breaker on RESOURCE_EXHAUSTED (NOSPACE's code, as etcd's): a
    // client per step after the first refusal.
    const fresh = (): Etcd3 => {
      client?.close();
      client = new Etcd3({ hosts: member!.clientUrls[0]! });
      return client;
    };
    const value = randomBytes(128 * 1024);
    let refused: unknown;
    for (let i = 0; i < (4 * quotaBytes) / value.length && refused === undefined; i++) {
      try {
        await client.put(`k${i % 4}`).value(value).exec();
      } catch (err) {
        refused = err;
      }
    }
    expect(String(refused)).toMatch(noSpace);
    const alarms = await fresh().maintenance.alarm({ action: AlarmAction.Get, memberID: 0, alarm: AlarmType.None });
    expect(alarms.alarms.map((a) => a.alarm)).toEqual(['Nospace']);
    await expect(fresh().put('more').value('x').exec()).rejects.toThrow(noSpace);
    // Reads still work under the alarm.
    expect(await fresh().get('k0').buffer()).toEqual(value);

    const current = (await client.get('k0').exec()).header.revision;
    await client.kv.compact({ revision: current, physical: true });
    await client.maintenance.defragment();
    const status = await client.maintenance.status();
    expect(Number(status.dbSize)).toBeLessThan(quotaBytes / 2);
    await client.maintenance.alarm({ action: AlarmAction.Deactivate, memberID: alarms.alarms[0]!.memberID, alarm: AlarmType.Nospace });
    await client.put('more').value('x').exec();
    expect(await client.get('more').string()).toBe('x');
  }, 120_000);
});
