/**
 * Auth across members: a member that joins after the log was compacted receives users, roles and the enabled
 * flag in the Raft snapshot; a simple token issued by one member is accepted by another (each learns it when
 * it applies the Authenticate entry).
 */
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { serviceDefinition, type Wire } from '../../src/api/grpc/proto.js';
import { startServer, waitFor } from './harness.js';
import { releaseAfterAll } from './release-after-all.js';

const { clients, raws, dirs } = releaseAfterAll();

function unary(port: number, service: string, method: string, req: Wire, token?: string): Promise<Wire> {
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition(service), service);
  const c = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & Record<string, Function>;
  raws.push(c);
  const md = new grpc.Metadata();
  if (token !== undefined) md.set('token', token);
  return new Promise((resolve, reject) => c[method]!.call(c, req, md, (err: Error | null, res: Wire) => (err ? reject(err) : resolve(res))));
}

describe('auth in a cluster', () => {
  it('ships auth state in the snapshot a joining member installs, and accepts tokens issued by another member', async () => {
    const token = 'auth-cluster-token';
    const a = await startServer({ name: 'a', args: ['--cluster-init', '--token', token, '--snapshot-count', '20', '--bcrypt-cost', '4'] });
    dirs.push(a.dataDir);
    const admin = new Etcd3({ hosts: a.clientUrl, dialTimeout: 2000 });
    clients.push(admin);
    await admin.user('root').create('rootpw');
    await admin.user('root').addRole('root');
    await admin.role('reader').create();
    await admin.role('reader').grant({ permission: 'Read', range: admin.range({ prefix: 'pub/' }) });
    await admin.user('alice').create('alicepw');
    await admin.user('alice').addRole('reader');
    await admin.auth.authEnable({});
    const root = new Etcd3({ hosts: a.clientUrl, dialTimeout: 2000, auth: { username: 'root', password: 'rootpw' } });
    clients.push(root);
    for (let i = 0; i < 60; i++) await root.put(`pub/${i}`).value(String(i));
    await waitFor('a snapshot on a', async () => (a.output.some((l) => l.includes('snapshot saved')) ? true : undefined), 30_000);

    const b = await startServer({ name: 'b', args: ['--server', a.peerUrl, '--token', token, '--bcrypt-cost', '4'] });
    dirs.push(b.dataDir);
    await waitFor('b restored from a snapshot', async () => (b.output.some((l) => l.includes('restoring from snapshot')) ? true : undefined), 30_000);

    const issued = (await unary(a.clientPort, 'etcdserverpb.Auth', 'Authenticate', { name: 'alice', password: 'alicepw' })).token as string;
    const onB = await waitFor('the token accepted on b', async () => {
      try {
        return await unary(b.clientPort, 'etcdserverpb.KV', 'Range', { key: Buffer.from('pub/7'), serializable: true }, issued);
      } catch (err) {
        if (/not supported for learner|no leader/.test(String(err))) return undefined;
        throw err;
      }
    }, 30_000);
    expect(Buffer.from(onB.kvs[0].value).toString()).toBe('7');
    await expect(unary(b.clientPort, 'etcdserverpb.KV', 'Range', { key: Buffer.from('secret'), serializable: true }, issued)).rejects.toThrow(/permission denied/);
    await expect(unary(b.clientPort, 'etcdserverpb.KV', 'Range', { key: Buffer.from('pub/7'), serializable: true })).rejects.toThrow(/user name is empty/);
    // AuthStatus is not served by a learner: wait until b is promoted.
    const status = await waitFor('AuthStatus on b once promoted', async () => {
      try {
        return await unary(b.clientPort, 'etcdserverpb.Auth', 'AuthStatus', {});
      } catch (err) {
        if (/not supported for learner|no leader/.test(String(err))) return undefined;
        throw err;
      }
    }, 60_000);
    expect(status.enabled).toBe(true);
  }, 180_000);
});
