/**
 * Whether the cluster token is a secret (issue 20, item 2). A static cluster's token defaults to etcd's
 * --initial-cluster-token, `etcd-cluster`: public, printed in every guide. Before, that value let anyone who
 * reached a client or peer port join a member (auto-promoted, sent every key). Now a public token opens no
 * join: a member joins only a cluster whose members were given a secret (--token, a generated token file,
 * or an --initial-cluster-token of the operator's own). The peer port itself is as open as etcd's without
 * peer TLS, which the start warns about (main/open-peer-port.ts).
 */
/** etcd's default --initial-cluster-token. */
export const publicClusterToken = 'etcd-cluster';

export function isSecretToken(token: string): boolean {
  return token !== '' && token !== publicClusterToken;
}

export const joinsRefusedMessage =
  "this cluster accepts no joins: its token is etcd's public default (--initial-cluster-token etcd-cluster); " +
  'restart its members with the same secret --token (they adopt it; or restore with a secret --initial-cluster-token) to let members join with --server';

/** The start's warning when the token opens no joins (the open peer port: main/open-peer-port.ts). */
export function joinsRefusedWarning(token: string): string | undefined {
  return isSecretToken(token) ? undefined : `joins are refused: ${joinsRefusedMessage}`;
}
