/**
 * Auth with real clients: the etcd3 npm client's `auth` option (it logs in and sends the token), raw gRPC for
 * what that client cannot show (AuthStatus, the watch refusal etcd sends, JWT tokens going stale with the
 * auth revision), and --client-cert-auth (the certificate's common name is the user).
 */
import * as grpc from '@grpc/grpc-js';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import type { Wire } from '../../src/api/grpc/proto.js';
import { freePort, repoRoot, startServer, tempDir } from './harness.js';
import { releaseAfterAll } from './release-after-all.js';
import { rawService, type RawService } from './raw-grpc.js';

const { clients, raws, dirs } = releaseAfterAll();

function client(url: string, auth?: { username: string; password: string }): Etcd3 {
  const c = new Etcd3({ hosts: url, dialTimeout: 2000, ...(auth !== undefined ? { auth } : {}) });
  clients.push(c);
  return c;
}

/** A raw client of one service; each method takes an optional token. */
function raw(port: number, service: string): RawService {
  return rawService(port, service, raws);
}

async function setUpUsers(c: Etcd3): Promise<void> {
  await c.user('root').create('rootpw');
  await c.user('root').addRole('root');
  await c.role('reader').create();
  await c.role('reader').grant({ permission: 'Read', range: c.range({ prefix: 'pub/' }) });
  await c.role('reader').grant({ permission: 'Readwrite', range: c.range('mine') });
  await c.user('alice').create('alicepw');
  await c.user('alice').addRole('reader');
}

describe('auth with the etcd3 client and raw gRPC', () => {
  it('logs in with the etcd3 auth option and is refused what its roles do not allow', async () => {
    const sp = await startServer({ name: 'auth-etcd3', args: ['--bcrypt-cost', '4'] });
    dirs.push(sp.dataDir);
    const admin = client(sp.clientUrl);
    await setUpUsers(admin);
    const authRaw = raw(sp.clientPort, 'etcdserverpb.Auth');
    expect(await authRaw.AuthStatus!({})).toMatchObject({ enabled: false });
    await authRaw.AuthEnable!({});
    const status = await authRaw.AuthStatus!({});
    expect([status.enabled, Number(status.authRevision)]).toEqual([true, 8]);

    const root = client(sp.clientUrl, { username: 'root', password: 'rootpw' });
    await root.put('pub/a').value('1');
    const alice = client(sp.clientUrl, { username: 'alice', password: 'alicepw' });
    expect(await alice.get('pub/a').string()).toBe('1');
    await alice.put('mine').value('2');
    expect(await alice.get('mine').string()).toBe('2');
    await expect(alice.put('pub/a').value('x')).rejects.toThrow(/permission denied/);
    await expect(alice.get('secret').string()).rejects.toThrow(/permission denied/);
    await expect(alice.getAll().prefix('').strings()).rejects.toThrow(/permission denied/);
    await expect(alice.if('secret', 'Value', '==', 'x').then(alice.put('mine').value('3')).commit()).rejects.toThrow(/permission denied/);
    await expect(alice.user('bob').create('pw')).rejects.toThrow(/permission denied/);
    await expect(client(sp.clientUrl, { username: 'alice', password: 'wrong' }).get('pub/a').string()).rejects.toThrow(/authentication failed/);
    await expect(client(sp.clientUrl).get('pub/a').string()).rejects.toThrow(/user name is empty/);

    // A lease holding a key alice may not write cannot be revoked by her (etcd 3.5 checks the lease's keys).
    const lease = root.lease(60, { autoKeepAlive: false });
    await lease.put('secret').value('s');
    const aliceLease = await alice.lease(60, { autoKeepAlive: false }).grant();
    expect(aliceLease).not.toBe('');
    const leaseRaw = raw(sp.clientPort, 'etcdserverpb.Lease');
    const aliceToken = (await authRaw.Authenticate!({ name: 'alice', password: 'alicepw' })).token as string;
    expect(aliceToken).toMatch(/^[a-zA-Z]{16}\.\d+$/);
    await expect(leaseRaw.LeaseRevoke!({ ID: await lease.grant() }, aliceToken)).rejects.toThrow(/permission denied/);
    await expect(leaseRaw.LeaseTimeToLive!({ ID: await lease.grant(), keys: true }, aliceToken)).rejects.toThrow(/permission denied/);

    // Watch: a range she may not read is refused the way etcd refuses it.
    const watch = raw(sp.clientPort, 'etcdserverpb.Watch').stream('Watch', aliceToken);
    watch.on('error', () => {}); // the stream ends with the connection when the test closes clients
    const first = new Promise<Wire>((resolve) => watch.once('data', resolve));
    watch.write({ createRequest: { key: Buffer.from('secret') } });
    const refused = await first;
    expect(Number(refused.watchId)).toBe(-1);
    expect(refused).toMatchObject({
      created: true, canceled: true,
      cancelReason: 'rpc error: code = PermissionDenied desc = etcdserver: permission denied',
    });
    const second = new Promise<Wire>((resolve) => watch.once('data', resolve));
    watch.write({ createRequest: { key: Buffer.from('pub/'), rangeEnd: Buffer.from('pub0') } });
    expect(await second).toMatchObject({ created: true, canceled: false });
    watch.end();

    await expect(raw(sp.clientPort, 'etcdserverpb.KV').Range!({ key: Buffer.from('pub/a') }, 'bogus.1')).rejects.toThrow(/invalid auth token/);
    // Deleting her makes her token worthless at once.
    await root.user('alice').delete();
    await expect(raw(sp.clientPort, 'etcdserverpb.KV').Range!({ key: Buffer.from('pub/a') }, aliceToken)).rejects.toThrow(/invalid auth token/);
  }, 120_000);

  it('issues JWTs that any member can check and that go stale when the auth state changes', async () => {
    const dir = tempDir('jwt-keys');
    dirs.push(dir);
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(join(dir, 'k'), pair.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    writeFileSync(join(dir, 'k.pub'), pair.publicKey.export({ type: 'spki', format: 'pem' }));
    const sp = await startServer({
      name: 'auth-jwt',
      args: ['--bcrypt-cost', '4', '--auth-token', `jwt,pub-key=${join(dir, 'k.pub')},priv-key=${join(dir, 'k')},sign-method=ES256,ttl=1m`],
    });
    dirs.push(sp.dataDir);
    await setUpUsers(client(sp.clientUrl));
    const authRaw = raw(sp.clientPort, 'etcdserverpb.Auth');
    await authRaw.AuthEnable!({});
    const token = (await authRaw.Authenticate!({ name: 'alice', password: 'alicepw' })).token as string;
    expect(token.split('.')).toHaveLength(3);
    const kv = raw(sp.clientPort, 'etcdserverpb.KV');
    await kv.Put!({ key: Buffer.from('mine'), value: Buffer.from('v') }, token);
    const rootToken = (await authRaw.Authenticate!({ name: 'root', password: 'rootpw' })).token as string;
    await authRaw.RoleAdd!({ name: 'another' }, rootToken);
    await expect(kv.Put!({ key: Buffer.from('mine'), value: Buffer.from('v') }, token)).rejects.toThrow(/revision of auth store is old/);
    const fresh = (await authRaw.Authenticate!({ name: 'alice', password: 'alicepw' })).token as string;
    await kv.Put!({ key: Buffer.from('mine'), value: Buffer.from('w') }, fresh);
  }, 120_000);

  it('takes the common name of a verified client certificate as the user under --client-cert-auth', async () => {
    const fixtures = join(repoRoot, 'test/peer/fixtures');
    const [ca, cert, key] = ['ca.pem', 'peer.pem', 'peer.key'].map((f) => join(fixtures, f)) as [string, string, string];
    const port = await freePort();
    const url = `https://127.0.0.1:${port}`;
    const sp = await startServer({
      name: 'auth-cn', clientPort: port, waitReady: false,
      args: ['--listen-client-urls', url, '--advertise-client-urls', url, '--cert-file', cert, '--key-file', key, '--trusted-ca-file', ca, '--client-cert-auth', '--bcrypt-cost', '4'],
    });
    dirs.push(sp.dataDir);
    const c = new Etcd3({ hosts: url, dialTimeout: 2000, credentials: { rootCertificate: readFileSync(ca), privateKey: readFileSync(key), certChain: readFileSync(cert) } });
    clients.push(c);
    for (let i = 0; ; i++) {
      try {
        await c.maintenance.status();
        break;
      } catch (err) {
        if (i > 100) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await c.user('root').create('rootpw');
    await c.user('root').addRole('root');
    await c.role('certs').create();
    await c.role('certs').grant({ permission: 'Readwrite', range: c.range({ prefix: 'cn/' }) });
    await c.user('peer').create('unused');
    await c.user('peer').addRole('certs');
    await c.auth.authEnable({});
    await c.put('cn/a').value('1');
    expect(await c.get('cn/a').string()).toBe('1');
    await expect(c.put('other').value('1')).rejects.toThrow(/permission denied/);
  }, 120_000);
});
