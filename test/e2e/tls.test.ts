/**
 * TLS as etcd configures it: https client URLs with --cert-file/--key-file/--trusted-ca-file and
 * --client-cert-auth, and TLS between members with the --peer-* set; a client without a certificate is
 * refused. Certificates: test/peer/fixtures (test-only CA; SAN 127.0.0.1).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { freePort, killAll, repoRoot, runCli, startServer, waitFor } from './harness.js';

const fixtures = join(repoRoot, 'test/peer/fixtures');
const ca = join(fixtures, 'ca.pem');
const cert = join(fixtures, 'peer.pem');
const key = join(fixtures, 'peer.key');
const clients: Etcd3[] = [];
afterAll(async () => {
  for (const c of clients) c.close();
  await killAll();
});

function tlsClient(url: string, withCert: boolean): Etcd3 {
  const c = new Etcd3({
    hosts: url,
    credentials: withCert
      ? { rootCertificate: readFileSync(ca), privateKey: readFileSync(key), certChain: readFileSync(cert) }
      : { rootCertificate: readFileSync(ca) },
    dialTimeout: 2000,
  });
  clients.push(c);
  return c;
}

describe('TLS for clients and peers', () => {
  it('serves https clients with certificate auth, and members talk over TLS', async () => {
    const tlsArgs = [
      '--cert-file', cert, '--key-file', key, '--trusted-ca-file', ca, '--client-cert-auth',
      '--peer-cert-file', cert, '--peer-key-file', key, '--peer-trusted-ca-file', ca, '--peer-client-cert-auth',
    ];
    const start = async (name: string, extra: string[]) => {
      const [cp, pp] = [await freePort(), await freePort()];
      const clientUrl = `https://127.0.0.1:${cp}`;
      const peerUrl = `https://127.0.0.1:${pp}`;
      return startServer({
        name, clientPort: cp, peerPort: pp, waitReady: false,
        args: [
          '--listen-client-urls', clientUrl, '--advertise-client-urls', clientUrl,
          '--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl,
          ...tlsArgs, ...extra,
        ],
      }).then((sp) => ({ sp, clientUrl, peerUrl }));
    };
    const a = await start('ta', ['--cluster-init', '--token', 'tls-token']);
    const ca1 = tlsClient(a.clientUrl, true);
    await waitFor('a serving over TLS', async () => (await ca1.maintenance.status()).leader !== '0' || undefined, 30_000);
    const b = await start('tb', ['--server', a.peerUrl, '--token', 'tls-token']);
    const cb = tlsClient(b.clientUrl, true);
    await ca1.put('secure').value('yes');
    expect(await waitFor('replicated over TLS peers', async () => (await cb.get('secure').string()) ?? undefined, 30_000)).toBe('yes');
    const noCert = tlsClient(a.clientUrl, false);
    await expect(noCert.get('secure').string()).rejects.toThrow();
    // etcetera status speaks TLS with etcdctl's flags, to both members; without a client certificate it is refused.
    const status = await runCli(['status', '--endpoints', `${a.clientUrl},${b.clientUrl}`, '--cacert', ca, '--cert', cert, '--key', key, '-w', 'json']);
    expect(status.code, status.stderr).toBe(0);
    const rows = JSON.parse(status.stdout) as Array<{ health: boolean; leader: string }>;
    expect(rows.map((r) => r.health)).toEqual([true, true]);
    expect(rows[0]!.leader).toBe(rows[1]!.leader);
    expect((await runCli(['status', '--endpoints', a.clientUrl, '--cacert', ca])).code).toBe(1);
  }, 90_000);
});
