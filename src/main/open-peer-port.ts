/**
 * The warning of issue 20, item 2: a member whose peer port listens beyond loopback, without peer TLS, with a
 * join token that is no secret (a static cluster's --initial-cluster-token, etcd's public default
 * "etcd-cluster" unless set) lets anyone who reaches the port join, change membership or speak Raft. etcd's
 * peer port is open the same way; we say so at start, as etcd's docs do, instead of leaving it unsaid.
 */
import { isIP } from 'node:net';
import type { MemberOptions } from '../config/member-options.js';

/** etcd's default --initial-cluster-token: public, so never a secret. */
const publicClusterToken = 'etcd-cluster';

function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/** The warning to log, or undefined when the peer port is loopback-only, TLS-protected, or keyed by a secret. */
export function openPeerPortWarning(o: Pick<MemberOptions, 'listenPeerUrls' | 'bootstrap'>, token: string): string | undefined {
  const open = o.listenPeerUrls.filter((raw) => {
    const u = new URL(raw);
    return u.protocol === 'http:' && !isLoopback(u.hostname);
  });
  if (open.length === 0) return undefined;
  const tokenIsPublic = token === publicClusterToken || (o.bootstrap.kind === 'static' && token === o.bootstrap.clusterToken);
  if (!tokenIsPublic) return undefined;
  return `the peer port is open: ${open.join(', ')} listens beyond loopback without peer TLS, and the join token is this ` +
    'static cluster\'s --initial-cluster-token, which is no secret; whoever reaches the port can join, change membership ' +
    'and speak Raft. Give --token a secret, or use --peer-cert-file, --peer-key-file, --peer-trusted-ca-file and --peer-client-cert-auth';
}
