/** The etcd3 npm client (microsoft/etcd3) against a real in-process node (node-harness.ts). */
import {
  Etcd3,
  EtcdLeaseInvalidError,
  GRPCInvalidArgumentError,
  type IKeyValue,
} from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNodeHarness, type NodeHarness } from './node-harness.js';

let h: NodeHarness;
let client: Etcd3;

beforeAll(async () => {
  h = await startNodeHarness();
  client = new Etcd3({ hosts: h.url, retry: false } as never);
});
afterAll(async () => {
  client?.close();
  await h?.close();
});

describe('etcd3 npm client', () => {
  it('puts, gets, lists by prefix and deletes', async () => {
    await client.put('a/1').value('one');
    await client.put('a/2').value('two');
    await client.put('b/1').value('other');
    expect(await client.get('a/1').string()).toBe('one');
    expect(await client.getAll().prefix('a/').strings()).toEqual({ 'a/1': 'one', 'a/2': 'two' });
    expect(await client.getAll().prefix('a/').count()).toBe(2);
    const del = await client.delete().prefix('a/').exec();
    expect(del.deleted).toBe('2');
    expect(await client.get('a/1').string()).toBeNull();
  });

  it('fills headers: cluster id, member id, revision, raft term', async () => {
    const put = await client.put('hdr').value('x').exec();
    const res = await client.get('hdr').exec();
    expect(res.header.cluster_id).toBe(String(h.member.clusterId));
    expect(res.header.member_id).toBe(String(h.member.memberId));
    expect(res.header.revision).toBe(put.header.revision);
    expect(Number(res.header.raft_term)).toBeGreaterThan(0);
    const kv = res.kvs[0] as IKeyValue;
    expect(kv.mod_revision).toBe(put.header.revision);
    expect(kv.version).toBe('1');
  });

  it('runs a txn with sub-responses carrying their own revision', async () => {
    await client.put('t').value('1');
    const res = await client
      .if('t', 'Value', '==', '1')
      .then(client.put('t').value('2'), client.get('t'))
      .else(client.put('t').value('3'))
      .commit();
    expect(res.succeeded).toBe(true);
    const sub = res.responses[1]!.response_range!;
    expect(sub.header.revision).toBe(res.header.revision);
    expect(sub.kvs[0]!.value.toString()).toBe('2');
    const miss = await client.if('t', 'Value', '==', '1').then(client.put('t').value('x')).commit();
    expect(miss.succeeded).toBe(false);
  });

  it('maps compaction errors as etcd does', async () => {
    const first = await client.put('c').value('1').exec();
    await client.put('c').value('2');
    const rev = Number(first.header.revision);
    await client.get('c').exec(); // warm
    await (client as unknown as { kv: { compact(r: object): Promise<unknown> } }).kv.compact({ revision: String(rev) });
    await expect(client.get('c').revision(rev - 1).string()).rejects.toThrow(
      'etcdserver: mvcc: required revision has been compacted',
    );
    await expect(client.get('c').revision(rev + 1000).string()).rejects.toThrow(
      'etcdserver: mvcc: required revision is a future revision',
    );
  });

  it('refuses bad input with etcd messages', async () => {
    await expect(client.put('').value('x').exec()).rejects.toThrow('etcdserver: key is not provided');
    await expect(client.put('big').value(Buffer.alloc(1.6 * 1024 * 1024)).exec()).rejects.toThrow(
      'etcdserver: request is too large',
    );
    await expect(client.put('big').value(Buffer.alloc(1.6 * 1024 * 1024)).exec()).rejects.toBeInstanceOf(
      GRPCInvalidArgumentError,
    );
    const ops = Array.from({ length: 129 }, (_, i) => client.put(`k${i}`).value('v'));
    await expect(client.if('t', 'Version', '>', 0).then(...ops).commit()).rejects.toThrow(
      'etcdserver: too many operations in txn request',
    );
    await expect(
      client.if('t', 'Version', '>', 0).then(client.put('d').value('1'), client.put('d').value('2')).commit(),
    ).rejects.toThrow('etcdserver: duplicate key given in txn request');
  });

  it('grants, keeps alive and revokes leases; an unknown lease is EtcdLeaseInvalidError', async () => {
    const lease = client.lease(30, { autoKeepAlive: false });
    await lease.put('leased').value('v');
    const id = await lease.grant();
    const ka = await lease.keepaliveOnce();
    expect(ka.TTL).toBe('30');
    expect(ka.ID).toBe(id);
    const ttl = await client.leaseClient.leaseTimeToLive({ ID: id, keys: true });
    expect(ttl.grantedTTL).toBe('30');
    expect(ttl.keys.map(String)).toEqual(['leased']);
    await lease.revoke();
    expect(await client.get('leased').string()).toBeNull();
    await expect(client.put('x').value('y').lease('12345').exec()).rejects.toBeInstanceOf(EtcdLeaseInvalidError);
    const gone = await client.leaseClient.leaseTimeToLive({ ID: '12345' });
    expect(gone.TTL).toBe('-1');
  });

  it('watches puts and deletes with prev_kv', async () => {
    const watcher = await client.watch().key('w').withPreviousKV().create();
    const seen: string[] = [];
    const done = new Promise<void>((resolve) => {
      watcher.on('put', (kv, prev) => {
        seen.push(`put ${kv.value.toString()} prev=${prev?.value.toString() ?? '-'}`);
      });
      watcher.on('delete', (kv, prev) => {
        seen.push(`delete prev=${prev?.value.toString() ?? '-'}`);
        resolve();
      });
    });
    await client.put('w').value('1');
    await client.put('w').value('2');
    await client.delete().key('w');
    await done;
    expect(seen).toEqual(['put 1 prev=-', 'put 2 prev=1', 'delete prev=2']);
    await watcher.cancel();
  });

  it('serves Auth: no roles before any is added', async () => {
    await expect(client.getRoles()).resolves.toEqual([]);
  });
});
