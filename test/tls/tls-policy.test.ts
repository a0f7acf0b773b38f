/**
 * Client certificate checks done after the handshake (tls-policy.ts): CA verification with the reason logged,
 * and etcd's allowed CN / allowed hostname lists. Certificates: test/e2e/fixtures/crl.
 */
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import * as tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/config/log.js';
import { type AllowedIdentities, acceptVerifiedClient, readCrl } from '../../src/tls/tls-policy.js';

const fixtures = join(import.meta.dirname, '../e2e/fixtures/crl');
const read = (name: string): Buffer => readFileSync(join(fixtures, name));

async function attempt(allowed: AllowedIdentities, client: 'client' | 'none'): Promise<{ accepted: boolean; log: string }> {
  const lines: string[] = [];
  const logger = createLogger({ sink: (l) => lines.push(l) });
  let accepted = false;
  const server = tls.createServer({ cert: read('server.pem'), key: read('server.key'), ca: read('ca.pem'), requestCert: true, rejectUnauthorized: false }, (socket) => {
    accepted = acceptVerifiedClient(socket, logger, allowed);
    if (accepted) socket.end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const socket = tls.connect({ host: '127.0.0.1', port, ca: read('ca.pem'), ...(client === 'client' ? { cert: read('client.pem'), key: read('client.key') } : {}) });
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

  it('reads a CRL in DER as well as PEM, as Go does (etcd\'s own fixture is DER): both revoke the same certificate', () => {
    const pem = readCrl(join(fixtures, 'crl.pem'));
    const der = readCrl(join(fixtures, 'crl.der'));
    expect(der.toString('latin1')).toMatch(/^-----BEGIN X509 CRL-----\n/);
    expect(der.toString('latin1').replace(/\s/g, '')).toBe(pem.toString('latin1').replace(/\s/g, ''));
    expect(() => tls.createSecureContext({ crl: der })).not.toThrow();
    expect(() => tls.createSecureContext({ crl: read('crl.der') })).toThrow(/Failed to parse CRL/);
  });
});
