/**
 * https:// listen URLs: server certificate, trusted CA and client certificate auth (etcd's --cert-file,
 * --key-file, --trusted-ca-file, --client-cert-auth). Certificates are made with openssl in a temp dir.
 * On FakeApi (issue 35): what is tested is the listener's TLS, not the services behind it (the e2e
 * test/e2e/tls.test.ts runs the real server with TLS).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as https from 'node:https';
import type { TLSSocket } from 'node:tls';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceDefinition } from '../../../src/api/grpc/proto.js';
import { FakeApi } from './fake-api.js';
import { startGrpcServer, type GrpcServerHandle } from '../../../src/api/grpc/server.js';

const openssl = '/usr/bin/openssl';
const haveOpenssl = existsSync(openssl);
if (!haveOpenssl) console.warn('skipping TLS tests: openssl not found');

let dir: string;
const file = (name: string): string => path.join(dir, name);

function makeCerts(): void {
  const run = (args: string[]): void => void execFileSync(openssl, args, { cwd: dir, stdio: 'pipe' });
  run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', '/CN=etcetera-test-ca', '-keyout', 'ca.key', '-out', 'ca.crt']);
  for (const name of ['server', 'client']) {
    run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${name}`,
      '-keyout', `${name}.key`, '-out', `${name}.csr`]);
    const ext = path.join(dir, `${name}.ext`);
    execFileSync('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ${ext}`]);
    run(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
      '-extfile', ext, '-out', `${name}.crt`]);
  }
}

let api: FakeApi;
let server: GrpcServerHandle;

beforeAll(async () => {
  if (!haveOpenssl) return;
  dir = await mkdtemp(path.join(tmpdir(), 'etcetera-tls-'));
  makeCerts();
  api = await FakeApi.create();
  server = await startGrpcServer({
    api,
    listenUrls: ['https://127.0.0.1:0', 'http://127.0.0.1:0'],
    tls: { certFile: file('server.crt'), keyFile: file('server.key'), trustedCaFile: file('ca.crt'), clientCertAuth: true },
  });
});
afterAll(async () => {
  api?.close();
  await server?.close(200);
  if (dir) await rm(dir, { recursive: true, force: true });
});

function statusCall(creds: grpc.ChannelCredentials, port: number): Promise<number> {
  const Ctor = grpc.makeGenericClientConstructor(serviceDefinition('etcdserverpb.Maintenance'), 'Maintenance');
  const client = new Ctor(`127.0.0.1:${port}`, creds) as grpc.Client & Record<string, Function>;
  return new Promise((resolve) => {
    client.Status!({}, new grpc.Metadata(), { deadline: Date.now() + 5000 }, (err: grpc.ServiceError | null) => {
      client.close();
      resolve(err ? err.code : grpc.status.OK);
    });
  });
}

describe.skipIf(!haveOpenssl)('TLS', () => {
  it('binds one port per listen URL', () => {
    expect(server.ports).toHaveLength(2);
    expect(server.ports[0]).not.toBe(server.ports[1]);
  });

  it('serves a client that presents a certificate signed by the trusted CA', async () => {
    const [ca, key, cert] = await Promise.all([readFile(file('ca.crt')), readFile(file('client.key')), readFile(file('client.crt'))]);
    const client = new Etcd3({
      hosts: `https://127.0.0.1:${server.ports[0]}`,
      credentials: { rootCertificate: ca, privateKey: key, certChain: cert },
    });
    try {
      await client.put('secure').value('yes');
      expect(await client.get('secure').string()).toBe('yes');
    } finally {
      client.close();
    }
  });

  it('refuses a TLS client without a certificate when client-cert-auth is on', async () => {
    const ca = await readFile(file('ca.crt'));
    expect(await statusCall(grpc.credentials.createSsl(ca), server.ports[0]!)).toBe(grpc.status.UNAVAILABLE);
  });

  it('keeps the http:// URL plaintext', async () => {
    expect(await statusCall(grpc.credentials.createInsecure(), server.ports[1]!)).toBe(grpc.status.OK);
  });

  it('speaks HTTP/1.1 on the TLS port: by ALPN, and by first bytes for a client offering no ALPN', async () => {
    const [ca, key, cert] = await Promise.all([readFile(file('ca.crt')), readFile(file('client.key')), readFile(file('client.crt'))]);
    const post = (alpn: string[] | undefined): Promise<{ status: number; body: string; alpn: string | false }> =>
      new Promise((resolve, reject) => {
        const req = https.request({
          host: '127.0.0.1', port: server.ports[0], path: '/v3/kv/range', method: 'POST', ca, key, cert, agent: false,
          ...(alpn ? { ALPNProtocols: alpn } : {}),
        }, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body, alpn: (res.socket as TLSSocket).alpnProtocol ?? false }));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ key: Buffer.from('secure').toString('base64') }));
      });
    for (const [alpn, negotiated] of [[['http/1.1'], 'http/1.1'], [undefined, false]] as const) {
      const r = await post(alpn ? [...alpn] : undefined);
      expect(r.alpn).toBe(negotiated);
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body).kvs[0].value).toBe(Buffer.from('yes').toString('base64'));
    }
  });

  it('rejects an https URL without tls options and unknown options', async () => {
    await expect(startGrpcServer({ api, listenUrls: ['https://127.0.0.1:0'] })).rejects.toThrow(/needs tls options/);
    await expect(startGrpcServer({ api, listenUrls: ['http://127.0.0.1:0'], bogus: 1 } as never)).rejects.toThrow(
      /unknown option bogus/,
    );
  });
});
