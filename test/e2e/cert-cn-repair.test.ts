/**
 * Issue 20, item 7, its last part: under --client-cert-auth over https, the common name of the client's
 * verified certificate is the user (etcd's rule when no token is given), on every path a connection takes.
 * etcdctl 3.4 sends a bare `:authority` over TLS (clientv3 sets the TLS server name), so its calls reach
 * grpc-js natively; a client that sends a schemed one (grpc-go dialing `passthrough:///https://host:port`
 * with TLS credentials and no server name) is repaired through a Duplex (src/api/http2/authority-fix.ts),
 * where grpc-js cannot see the certificate: such calls were refused "user name is empty". etcd 3.4 takes
 * the name in both cases (checked with this raw client against `etcd` from Debian's etcd-server).
 */
import { execFile } from 'node:child_process';
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { etcdctlPath, freePort, haveEtcdctl, repoRoot, startServer, waitFor } from './harness.js';
import { releaseAfterAll } from './release-after-all.js';
import { grpcServerKind } from '../../src/api/grpc/grpc-transport.js';

const execFileP = promisify(execFile);
const fixtures = join(repoRoot, 'test/peer/fixtures');
const [ca, cert, key] = ['ca.pem', 'peer.pem', 'peer.key'].map((f) => join(fixtures, f)) as [string, string, string];
const { clients, sessions, dirs } = releaseAfterAll();

interface GrpcAnswer {
  status: string | undefined;
  message: string | undefined;
}

/** One HTTP/2 connection over TLS with the client certificate, sending each request as the test writes it. */
function connection(port: number): (path: string, body: Buffer, headers?: http2.OutgoingHttpHeaders) => Promise<GrpcAnswer> {
  const session = http2.connect(`https://127.0.0.1:${port}`, { ca: readFileSync(ca), cert: readFileSync(cert), key: readFileSync(key) });
  session.on('error', () => {});
  sessions.push(session);
  return (path, body, headers = {}) =>
    new Promise((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
      let answer: GrpcAnswer = { status: undefined, message: undefined };
      const read = (h: http2.IncomingHttpHeaders): void => {
        const status = h['grpc-status'];
        if (typeof status === 'string') answer = { status, message: decodeURIComponent(String(h['grpc-message'] ?? '')) };
      };
      req.on('response', read);
      req.on('trailers', read);
      req.on('data', () => {});
      req.on('error', reject);
      req.on('close', () => resolve(answer));
      req.end(Buffer.concat([Buffer.from([0, 0, 0, 0, body.length]), body]));
    });
}

/** A KV.Put request's bytes: key (1) and value (2), short strings. */
function putBody(k: string, v: string): Buffer {
  const field = (n: number, s: string): Buffer => Buffer.concat([Buffer.from([(n << 3) | 2, Buffer.byteLength(s)]), Buffer.from(s)]);
  return Buffer.concat([field(1, k), field(2, v)]);
}

const put = '/etcdserverpb.KV/Put';
const ok = { status: '0' };
const denied = { status: '7', message: 'etcdserver: permission denied' };
const userEmpty = { status: '3', message: 'etcdserver: user name is empty' };

describe('the certificate common name as the user, whatever the :authority', () => {
  it('takes it on a connection repaired for a schemed :authority, as on a native one, and cannot be forged', async () => {
    const port = await freePort();
    const url = `https://127.0.0.1:${port}`;
    const sp = await startServer({
      name: 'cn-repair', clientPort: port, waitReady: false,
      args: ['--listen-client-urls', url, '--advertise-client-urls', url, '--cert-file', cert, '--key-file', key, '--trusted-ca-file', ca, '--client-cert-auth', '--bcrypt-cost', '4'],
    });
    dirs.push(sp.dataDir);
    const c = new Etcd3({ hosts: url, dialTimeout: 2000, credentials: { rootCertificate: readFileSync(ca), privateKey: readFileSync(key), certChain: readFileSync(cert) } });
    clients.push(c);
    await waitFor('the member', async () => c.maintenance.status().then(() => true, () => undefined));
    await c.user('root').create('rootpw');
    await c.user('root').addRole('root');
    await c.role('certs').create();
    await c.role('certs').grant({ permission: 'Readwrite', range: c.range({ prefix: 'cn/' }) });
    await c.user('peer').create('unused'); // the fixture certificate's CN
    await c.user('peer').addRole('certs');
    await c.auth.authEnable({});

    // Native: a bare authority, as etcdctl 3.4 and every modern client send it.
    const native = connection(port);
    expect(await native(put, putBody('cn/native', '1'), { ':authority': `127.0.0.1:${port}` })).toMatchObject(ok);
    expect(await native(put, putBody('other', '1'), { ':authority': `127.0.0.1:${port}` })).toEqual(denied);

    // Repaired: a schemed authority on the first request sends the whole connection through the Duplex.
    const repaired = connection(port);
    const schemed = { ':authority': url };
    expect(await repaired(put, putBody('cn/repaired', '1'), schemed)).toMatchObject(ok);
    expect(await repaired(put, putBody('cn/repaired', '2'), schemed)).toMatchObject(ok); // a later stream too
    expect(await repaired(put, putBody('other', '1'), schemed)).toEqual(denied);
    expect(await c.get('cn/repaired').string()).toBe('2');

    // A client cannot name a connection itself: its own tag on a repaired connection leaves the call nameless,
    // and on a native one it is ignored (the certificate decides).
    const forged = { 'etcetera-repaired-connection': '0123456789abcdef0123456789abcdef' };
    // On our own HTTP/2 frames no connection is repaired (a schemed authority is read as it is): there the
    // tag is ignored as on a native connection.
    const forgedOnSchemed = grpcServerKind(undefined, process.env) === 'frames' ? ok : userEmpty;
    expect(await repaired(put, putBody('cn/forged', '1'), { ...schemed, ...forged })).toMatchObject(forgedOnSchemed);
    expect(await native(put, putBody('cn/forged', '1'), { ':authority': `127.0.0.1:${port}`, ...forged })).toMatchObject(ok);

    if (haveEtcdctl()) {
      // etcdctl 3.4 with an https:// endpoint, the certificate and no user: it calls as `peer`.
      const run = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
        execFileP(etcdctlPath, ['--cacert', ca, '--cert', cert, '--key', key, '--endpoints', url, '--command-timeout=5s', ...args], { timeout: 15_000 }).then(
          (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
          (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
        );
      expect((await run('put', 'cn/etcdctl', 'v')).stdout.trim()).toBe('OK');
      const refused = await run('put', 'other', 'v');
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('Error: etcdserver: permission denied');
      expect(await c.get('cn/etcdctl').string()).toBe('v');
    }
  }, 120_000);
});
