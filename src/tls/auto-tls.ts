/**
 * --auto-tls / --peer-auto-tls: when no certificate files are given, a self-signed certificate for the
 * listen hosts is made at start and kept at <data-dir>/fixtures/client|peer/{cert,key}.pem (etcd's paths),
 * reused at the next start. Clients and peers cannot verify it (no CA), as with etcd: clients connect with
 * --insecure-skip-tls-verify, peers authenticate each other by the cluster token.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Logger } from '../config/log.js';
import type { MemberOptions, TlsFiles } from '../config/member-options.js';
import { writeFileAtomically } from '../wal/atomic-file.js';
import { NodeFsPort } from '../wal/fs-port.js';
import { selfSignedCert } from './self-signed-cert.js';

export async function withAutoTls(o: MemberOptions): Promise<MemberOptions> {
  const auto = o.autoTls;
  if (auto === undefined) return o;
  const out: MemberOptions = { ...o };
  if (auto.client && o.clientTls === undefined) {
    const files = await ensureSelfCert(join(o.dataDir, 'fixtures', 'client'), hostsOf(o.listenClientUrls), auto.validityYears, false, o.logger);
    out.clientTls = { ...files, ...(auto.clientCrlFile !== undefined ? { crlFile: auto.clientCrlFile } : {}) };
  }
  if (auto.peer && o.peerTls === undefined) {
    const files = await ensureSelfCert(join(o.dataDir, 'fixtures', 'peer'), hostsOf(o.listenPeerUrls), auto.validityYears, true, o.logger);
    out.peerTls = { ...files, ...(auto.peerCrlFile !== undefined ? { crlFile: auto.peerCrlFile } : {}) };
  }
  return out;
}

function hostsOf(urls: readonly string[]): string[] {
  return [...new Set(urls.map((u) => new URL(u).hostname.replace(/^\[(.*)\]$/, '$1')))];
}

async function ensureSelfCert(dir: string, hosts: string[], validityYears: number, clientAuth: boolean, log: Logger): Promise<TlsFiles> {
  const certFile = resolve(dir, 'cert.pem');
  const keyFile = resolve(dir, 'key.pem');
  if (existsSync(certFile) && existsSync(keyFile)) return { certFile, keyFile };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const notBefore = new Date();
  const { certPem, keyPem } = selfSignedCert({ hosts, validityYears, clientAuth, notBefore });
  log.warn('automatically generate certificates', {
    'certificate-validity-bound-not-after': new Date(notBefore.getTime() + validityYears * 365 * 86_400_000).toISOString(),
  });
  // Each whole or not at all, the key first: a crash between them leaves no certificate, so the next start makes both again.
  const fs = new NodeFsPort();
  await writeFileAtomically(fs, keyFile, Buffer.from(keyPem), { mode: 0o600 });
  await writeFileAtomically(fs, certFile, Buffer.from(certPem), { mode: 0o644 });
  log.info('created cert file', { path: certFile });
  log.info('created key file', { path: keyFile });
  return { certFile, keyFile };
}
