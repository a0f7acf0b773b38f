/** --auto-tls certificates: shaped as etcd's transport.SelfCert makes them, and usable by Node's TLS. */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { once } from 'node:events';
import * as tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { selfSignedCert } from '../../src/tls/self-signed-cert.js';

describe('self-signed certificates', () => {
  it('is an ECDSA P-521 certificate for O=etcd with the hosts as SANs, valid for the given years, self-verifying', () => {
    const notBefore = new Date('2030-01-02T03:04:05Z');
    const { certPem, keyPem } = selfSignedCert({ hosts: ['127.0.0.1', 'etcd.local', '::1'], validityYears: 30, clientAuth: true, notBefore });
    const x = new X509Certificate(certPem);
    expect(x.subject).toBe('O=etcd');
    expect(x.issuer).toBe('O=etcd');
    expect(x.subjectAltName).toBe('IP Address:127.0.0.1, DNS:etcd.local, IP Address:0:0:0:0:0:0:0:1');
    expect(new Date(x.validFrom).toISOString()).toBe('2030-01-02T03:04:05.000Z');
    // 30 × 365 days later: past 2050, so the end is a GeneralizedTime.
    expect(new Date(x.validTo).getTime()).toBe(notBefore.getTime() + 30 * 365 * 86_400_000);
    expect(x.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    expect(x.ca).toBe(false);
    expect(x.verify(x.publicKey)).toBe(true);
    expect(x.publicKey.asymmetricKeyDetails).toMatchObject({ namedCurve: 'secp521r1' });
    expect(keyPem).toMatch(/^-----BEGIN EC PRIVATE KEY-----\n/);
    expect(x.checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
    expect(selfSignedCert({ hosts: [], validityYears: 1, clientAuth: false }).certPem).not.toBe(certPem);
    expect(new X509Certificate(selfSignedCert({ hosts: [], validityYears: 1, clientAuth: false }).certPem).keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
  });

  it('serves TLS that a client pinning the certificate accepts', async () => {
    const { certPem, keyPem } = selfSignedCert({ hosts: ['127.0.0.1'], validityYears: 1, clientAuth: false });
    const server = tls.createServer({ cert: certPem, key: keyPem }, (s) => s.end('ok'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    try {
      const socket = tls.connect({ host: '127.0.0.1', port, ca: certPem });
      const [data] = (await once(socket, 'data')) as [Buffer];
      expect(data.toString()).toBe('ok');
      expect(socket.authorized).toBe(true);
      socket.destroy();
    } finally {
      server.close();
    }
  });
});
