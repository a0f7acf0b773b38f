/**
 * Client certificate checks done after the handshake (tls-policy.ts): CA verification with the reason logged,
 * revocation as etcd checks it (crl.ts: serial numbers only, an updated file honoured without a restart), and etcd's allowed
 * CN / allowed hostname lists. Certificates: test/e2e/fixtures/crl and crl-expired.
 */
import { mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { crlStatIntervalMs } from '../../src/base/limits.js';
import { createLogger } from '../../src/config/log.js';
import { type AllowedIdentities, acceptVerifiedClient } from '../../src/tls/tls-policy.js';
import { revokedSerials } from '../../src/tls/crl.js';

const fixtures = join(import.meta.dirname, '../e2e/fixtures/crl');
const expiredFixtures = join(import.meta.dirname, '../e2e/fixtures/crl-expired');
const read = (name: string, dir = fixtures): Buffer => readFileSync(join(dir, name));

/** One TLS connection to a server that checks client certificates; `client` names the certificate sent. */
async function attempt(allowed: AllowedIdentities, client: 'client' | 'revoked' | 'none', dir = fixtures): Promise<{ accepted: boolean; log: string }> {
  const lines: string[] = [];
  const logger = createLogger({ sink: (l) => lines.push(l) });
  let accepted = false;
  const server = tls.createServer({ cert: read('server.pem'), key: read('server.key'), ca: read('ca.pem', dir), requestCert: true, rejectUnauthorized: false }, (socket) => {
    accepted = acceptVerifiedClient(socket, logger, allowed);
    if (accepted) socket.end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const socket = tls.connect({ host: '127.0.0.1', port, ca: read('ca.pem'), ...(client !== 'none' ? { cert: read(`${client}.pem`, dir), key: read(`${client}.key`, dir) } : {}) });
  socket.on('error', () => {});
  socket.resume();
  await once(socket, 'close');
  server.close();
  return { accepted, log: lines.join('') };
}

describe('client certificate checks', () => {
  it('accepts a certificate from the CA, and refuses a missing one with the reason and address logged', async () => {
    expect((await attempt({}, 'client')).accepted).toBe(true);
    const none = await attempt({}, 'none');
    expect(none.accepted).toBe(false);
    expect(none.log).toMatch(/"rejected connection","remote-addr":"127\.0\.0\.1:\d+".*client certificate not accepted/);
  });

  it('applies etcd\'s allowed CN list', async () => {
    expect((await attempt({ allowedCns: ['etcd-peer', 'client'] }, 'client')).accepted).toBe(true);
    const refused = await attempt({ allowedCns: ['etcd-peer'] }, 'client');
    expect(refused.accepted).toBe(false);
    expect(refused.log).toMatch(/CommonName authentication failed \(CN \\"client\\" not allowed\)/);
  });

  it('applies etcd\'s allowed hostname list', async () => {
    expect((await attempt({ allowedHostnames: ['client'] }, 'client')).accepted).toBe(true);
    const refused = await attempt({ allowedHostnames: ['etcd.example'] }, 'client');
    expect(refused.accepted).toBe(false);
    expect(refused.log).toMatch(/not valid for any of etcd\.example/);
  });

  it('reads a CRL in DER as well as PEM, as Go does (etcd\'s own fixture is DER): both revoke the same serial', () => {
    expect([...revokedSerials(read('crl.pem'))]).toEqual(['1002']);
    expect([...revokedSerials(read('crl.der'))]).toEqual(['1002']);
    expect([...revokedSerials(read('crl.der', expiredFixtures))]).toEqual(['2002']); // a version 1 list
    expect(() => revokedSerials(read('client.pem'))).toThrow(/no "X509 CRL" block/);
    expect(() => revokedSerials(Buffer.from([0x30, 0x82, 0xff]))).toThrow(/bad DER length|past its parent/);
  });

  it('refuses a revoked certificate with etcd\'s message, and accepts the others', async () => {
    const crlFile = join(fixtures, 'crl.der');
    expect((await attempt({ crlFile }, 'client')).accepted).toBe(true);
    const revoked = await attempt({ crlFile }, 'revoked');
    expect(revoked.accepted).toBe(false);
    expect(revoked.log).toMatch(/"rejected connection".*transport: certificate serial 1002 revoked/);
  });

  it('applies an expired CRL as etcd does: only its serials count (OpenSSL\'s check refused every certificate)', async () => {
    const crlFile = join(expiredFixtures, 'crl.der');
    expect((await attempt({ crlFile }, 'client', expiredFixtures)).accepted).toBe(true);
    const revoked = await attempt({ crlFile }, 'revoked', expiredFixtures);
    expect(revoked.accepted).toBe(false);
    expect(revoked.log).toMatch(/transport: certificate serial 2002 revoked/);
  });

  it('honours a CRL updated on disk without a restart (within crlStatIntervalMs)', async () => {
    const crlFile = join(mkdtempSync(join(tmpdir(), 'etcetera-crl-')), 'crl.der');
    writeFileSync(crlFile, read('crl.der', expiredFixtures)); // revokes 2002, not the `revoked` certificate's 1002
    expect((await attempt({ crlFile }, 'revoked')).accepted).toBe(true);
    writeFileSync(`${crlFile}.new`, read('crl.der')); // revokes 1002
    renameSync(`${crlFile}.new`, crlFile);
    await new Promise((resolve) => setTimeout(resolve, crlStatIntervalMs + 100));
    const refused = await attempt({ crlFile }, 'revoked');
    expect(refused.accepted).toBe(false);
    expect(refused.log).toMatch(/transport: certificate serial 1002 revoked/);
  });
});
