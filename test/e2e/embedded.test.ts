/**
 * Embedding: a member started inside this (host) process through the library API, used through its
 * in-process client while a real gRPC client (etcd3) reaches it at the same time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { requestBytesMax } from '../../src/base/limits.js';
import { startEtcetera, type Etcetera, type PutRequest } from '../../src/index.js';
import { freePort, removeDir, tempDir, waitFor } from './harness.js';

const putOf = (key: string, value: string | Uint8Array): PutRequest => ({
  key: Buffer.from(key), value: typeof value === 'string' ? Buffer.from(value) : value, lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false,
});

describe('an embedded member', () => {
  let member: Etcetera;
  let grpcClient: Etcd3;
  let dir: string;
  const leaders: bigint[] = [];

  beforeAll(async () => {
    dir = tempDir('embedded');
    const [c, p] = [await freePort(), await freePort()];
    member = await startEtcetera({
      name: 'host',
      dataDir: dir,
      listenClientUrls: [`http://127.0.0.1:${c}`],
      listenPeerUrls: [`http://127.0.0.1:${p}`],
      storageProfile: 'ssd',
    });
    member.onLeaderChange((l) => leaders.push(l));
    grpcClient = new Etcd3({ hosts: member.clientUrls[0]! });
  }, 30_000);

  afterAll(async () => {
    grpcClient.close();
    await member.close();
    removeDir(dir);
  });

  it('serves the in-process client and gRPC clients on the same data', async () => {
    const put = await member.client.put('shared', 'from-host');
    expect(put.revision).toBeGreaterThan(1);
    expect(await grpcClient.get('shared').string()).toBe('from-host');
    await grpcClient.put('shared').value('from-grpc');
    const got = await member.client.get('shared');
    expect(Buffer.from(got.kvs[0]!.value).toString()).toBe('from-grpc');
    expect(got.kvs[0]!.version).toBe(2);
  });

  it('delivers watch events to the host for writes made over gRPC', async () => {
    const seen: string[] = [];
    const w = member.client.watch({ key: Buffer.from('w/'), rangeEnd: Buffer.from('w0') }, (r) => {
      for (const e of r.events) seen.push(Buffer.from(e.kv.key).toString());
    });
    await grpcClient.put('w/1').value('a');
    await grpcClient.put('w/2').value('b');
    await waitFor('events', async () => (seen.length === 2 ? seen : undefined));
    expect(seen).toEqual(['w/1', 'w/2']);
    w.cancel();
  });

  it("refuses a value over the request limit with etcd's error, and keeps serving", async () => {
    const tooLarge = 'etcdserver: request is too large';
    // Past the WAL's record limit too: unchecked, it would reach the log and fail-stop the member.
    await expect(member.client.put('big', new Uint8Array(17 * 1024 * 1024))).rejects.toThrow(tooLarge);
    await expect(member.client.put('big', new Uint8Array(requestBytesMax))).rejects.toThrow(tooLarge);
    const half = new Uint8Array(requestBytesMax / 2 + 1);
    const twoPuts = { compare: [], success: [{ put: putOf('a', half) }, { put: putOf('b', half) }], failure: [] };
    await expect(member.client.txn(twoPuts)).rejects.toThrow(tooLarge);
    const stopped = await Promise.race([member.stopped, Promise.resolve('running')]);
    expect(stopped).toBe('running');
    await member.client.put('after-big', 'small');
    expect(await grpcClient.get('after-big').string()).toBe('small');
    expect((await member.client.get('big')).kvs).toEqual([]);
  });

  it("refuses an empty key with etcd's error, as gRPC does", async () => {
    const noKey = 'etcdserver: key is not provided';
    await expect(member.client.put('', 'v')).rejects.toThrow(noKey);
    await expect(member.client.get('')).rejects.toThrow(noKey);
    await expect(member.client.delete('')).rejects.toThrow(noKey);
    await expect(member.client.txn({ compare: [], success: [{ put: putOf('', 'v') }], failure: [] })).rejects.toThrow(noKey);
    await expect(grpcClient.put('').value('v')).rejects.toThrow(noKey);
  });

  it('grants leases in process and reports the leader', async () => {
    const lease = await member.client.leaseGrant(30);
    await member.client.put('leased', 'v', { lease: lease.id });
    const ttl = await member.client.leaseTimeToLive(lease.id, true);
    expect(ttl.keys.map((k) => Buffer.from(k).toString())).toEqual(['leased']);
    expect(await member.client.leaseKeepAlive(lease.id)).toBe(30);
    expect(leaders).toContain(member.memberId);
  });
});
