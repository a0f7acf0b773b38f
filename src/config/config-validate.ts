/**
 * Checks and derivations for option values: URLs, the initial cluster, TLS file sets, compaction retention.
 * Messages name the flag and, where etcd has the same check, use etcd's wording.
 */
import { accessSync, constants } from 'node:fs';
import { isIP } from 'node:net';
import { parseRetentionMs } from './duration.js';
import { ConfigError } from './config-sources.js';

export interface InitialMember {
  name: string;
  peerUrls: string[];
}

/** A comma-separated URL list; each http(s)://host:port with no path, query or credentials. */
export function parseUrlList(text: string, flag: string): string[] {
  const items = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  return items.map((item) => checkUrl(item, flag));
}

export function checkUrl(text: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`invalid value ${JSON.stringify(text)} for flag --${flag}: not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`invalid value ${JSON.stringify(text)} for flag --${flag}: URL scheme must be http or https`);
  }
  if (url.hostname === '') throw new ConfigError(`invalid value ${JSON.stringify(text)} for flag --${flag}: URL has no host`);
  if (url.port === '' && !/:\d+\/?$/.test(text)) {
    throw new ConfigError(`invalid value ${JSON.stringify(text)} for flag --${flag}: URL must include a port (e.g. http://127.0.0.1:2379)`);
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '' || url.username !== '') {
    throw new ConfigError(`invalid value ${JSON.stringify(text)} for flag --${flag}: URL must be scheme://host:port only`);
  }
  return text.replace(/\/$/, '');
}

function hostOf(url: string): string {
  return new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
}

/** etcd binds only to IPs ("expected IP in URL for binding"); we also accept localhost. */
export function checkListenUrls(urls: string[], flag: string): void {
  for (const url of urls) {
    const host = hostOf(url);
    if (host !== 'localhost' && isIP(host) === 0) throw new ConfigError(`--${flag}: expected IP in URL for binding (${url})`);
  }
}

export function isUnspecifiedHost(url: string): boolean {
  const host = hostOf(url);
  return host === '0.0.0.0' || host === '::';
}

/**
 * `--initial-cluster infra0=http://10.0.1.10:2380,infra1=http://10.0.1.11:2380`; a name may repeat to give
 * a member several URLs. Order of first appearance is kept.
 */
export function parseInitialCluster(text: string): InitialMember[] {
  const members = new Map<string, string[]>();
  for (const entry of text.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const eq = entry.indexOf('=');
    if (eq <= 0 || eq === entry.length - 1) {
      throw new ConfigError(`--initial-cluster: bad entry ${JSON.stringify(entry)} (want name=peerURL, e.g. infra0=http://10.0.1.10:2380)`);
    }
    const name = entry.slice(0, eq);
    const url = checkUrl(entry.slice(eq + 1), 'initial-cluster');
    const urls = members.get(name) ?? [];
    if (urls.includes(url)) throw new ConfigError(`--initial-cluster: duplicate URL ${url} for member ${JSON.stringify(name)}`);
    urls.push(url);
    members.set(name, urls);
  }
  if (members.size === 0) throw new ConfigError('--initial-cluster is empty');
  const seen = new Map<string, string>();
  for (const [name, urls] of members) {
    for (const url of urls) {
      const other = seen.get(url);
      if (other !== undefined) throw new ConfigError(`--initial-cluster: URL ${url} is given for both ${JSON.stringify(other)} and ${JSON.stringify(name)}`);
      seen.set(url, name);
    }
  }
  return [...members].map(([name, peerUrls]) => ({ name, peerUrls }));
}

/** etcd's check that this member appears in the initial cluster with exactly its advertised peer URLs. */
export function checkSelfInCluster(cluster: InitialMember[], name: string, advertisePeerUrls: string[]): void {
  const self = cluster.find((m) => m.name === name);
  if (self === undefined) throw new ConfigError(`couldn't find local name ${JSON.stringify(name)} in the initial cluster configuration`);
  const want = [...self.peerUrls].sort().join(',');
  const have = [...advertisePeerUrls].sort().join(',');
  if (want !== have) {
    throw new ConfigError(
      `--initial-cluster has ${name}=${self.peerUrls.join(',')} but missing from --initial-advertise-peer-urls=${advertisePeerUrls.join(',')}`,
    );
  }
}

export interface TlsFileSet {
  certFile: string;
  keyFile: string;
  trustedCaFile?: string;
  clientCertAuth?: boolean;
}

/** cert and key together; client-cert-auth needs a CA; every file readable. */
export function tlsFileSet(
  prefix: '' | 'peer-',
  files: { cert: string; key: string; ca: string; clientCertAuth: boolean },
): TlsFileSet | undefined {
  const f = (name: string): string => `--${prefix}${name}`;
  if ((files.cert === '') !== (files.key === '')) throw new ConfigError(`${f('cert-file')} and ${f('key-file')} must be given together`);
  if (files.cert === '') {
    if (files.ca !== '') throw new ConfigError(`${f('trusted-ca-file')} needs ${f('cert-file')} and ${f('key-file')}`);
    if (files.clientCertAuth) throw new ConfigError(`${f('client-cert-auth')} needs ${f('cert-file')}, ${f('key-file')} and ${f('trusted-ca-file')}`);
    return undefined;
  }
  if (files.clientCertAuth && files.ca === '') throw new ConfigError(`${f('client-cert-auth')} needs ${f('trusted-ca-file')}`);
  for (const [name, path] of [['cert-file', files.cert], ['key-file', files.key], ['trusted-ca-file', files.ca]] as const) {
    if (path === '') continue;
    try {
      accessSync(path, constants.R_OK);
    } catch (err) {
      throw new ConfigError(`cannot read ${f(name)} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  return {
    certFile: files.cert,
    keyFile: files.key,
    ...(files.ca !== '' ? { trustedCaFile: files.ca } : {}),
    ...(files.clientCertAuth ? { clientCertAuth: true } : {}),
  };
}

/** https URLs need the matching certificate (etcd: "TLS key/cert … must be provided"), or auto TLS. */
export function checkHttpsHasTls(urls: string[], flag: string, hasTls: boolean, certFlags: string): void {
  const secure = urls.find((u) => u.startsWith('https:'));
  if (secure !== undefined && !hasTls) {
    throw new ConfigError(`TLS key/cert (${certFlags}) must be provided for --${flag} ${secure} with HTTPS scheme`);
  }
}

/** Retention as etcd reads it: periodic = hours or a duration ('5m', '1h'); revision = a count. 0 = off. */
export function checkRetention(mode: 'periodic' | 'revision', retention: string): { retentionMs: number; retentionRevisions: number } {
  const text = retention.trim();
  if (mode === 'revision') {
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
      throw new ConfigError(`invalid --auto-compaction-retention ${JSON.stringify(retention)} for mode revision: expected a revision count`);
    }
    return { retentionMs: 0, retentionRevisions: Number(text) };
  }
  const ms = parseRetentionMs(text);
  if (ms === undefined) {
    throw new ConfigError(`invalid --auto-compaction-retention ${JSON.stringify(retention)} for mode periodic: expected hours or a duration like 30m, 1h`);
  }
  return { retentionMs: ms, retentionRevisions: 0 };
}
