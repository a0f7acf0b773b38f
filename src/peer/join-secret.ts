/**
 * Whether the cluster token is a secret (issue 20, item 2). A static cluster's token defaults to etcd's
 * --initial-cluster-token, `etcd-cluster`: public, printed in every guide. Before, that value let anyone who
 * reached a client or peer port join a member (auto-promoted, sent every key). Now a public token opens no
 * join: a member joins only a cluster whose members were given a secret (--token, a generated token file,
 * or an --initial-cluster-token of the operator's own). The peer port itself is as open as etcd's without
 * peer TLS, which the start warns about.
 */
import type { MemberOptions } from '../config/member-options.js';

/** etcd's default --initial-cluster-token. */
export const publicClusterToken = 'etcd-cluster';

export function isSecretToken(token: string): boolean {
  return token !== '' && token !== publicClusterToken;
}

export const joinsRefusedMessage =
  "this cluster accepts no joins: its token is etcd's public default (--initial-cluster-token etcd-cluster); " +
  'give every member the same secret --token (or restore with a secret --initial-cluster-token) to let members join with --server';

/** The start's warnings about what the token leaves open; empty when it is a secret. */
export function openDoorWarnings(o: Pick<MemberOptions, 'peerTls' | 'listenPeerUrls'>, token: string): string[] {
  if (isSecretToken(token)) return [];
  const warnings = [`joins are refused: ${joinsRefusedMessage}`];
  const beyondLoopback = o.listenPeerUrls.filter((u) => !isLoopback(u));
  if (o.peerTls === undefined && beyondLoopback.length > 0) {
    warnings.push(
      `the peer port (${beyondLoopback.join(',')}) accepts anyone who can reach it, as etcd's does without peer TLS: ` +
      'use --peer-cert-file/--peer-key-file with --peer-client-cert-auth, or a secret --token, or firewall it',
    );
  }
  return warnings;
}

function isLoopback(url: string): boolean {
  const host = new URL(url.includes('://') ? url : `http://${url}`).hostname.replace(/^\[(.*)\]$/, '$1');
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}
