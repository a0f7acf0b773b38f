/**
 * etcetera as a library, embedded in a host process as k3s embeds etcd:
 *
 * ```ts
 * import { startEtcetera } from 'etcetera';
 * const member = await startEtcetera({ dataDir: './data', listenClientUrls: ['http://127.0.0.1:2379'] });
 * await member.client.put('greeting', 'hello');           // in-process, no gRPC
 * member.onLeaderChange((leader) => console.log(leader));  // 0n: no leader
 * await member.close();
 * ```
 * The same member serves gRPC on its client URLs, so etcdctl or kube-apiserver can use it at the same time.
 */
import { createLogger } from './config/log.js';
import { EmbeddedClient } from './api/embedded-client.js';
import { startMember, type RunningMember } from './main/member.js';
import { withMemberDefaults, type MemberOptionsInput } from './config/member-options.js';

export type { MemberOptions, MemberOptionsInput, ClusterBootstrap, TlsFiles } from './config/member-options.js';
export type { EtcdApi } from './node/server-api.js';
export { EmbeddedClient, type EmbeddedClientOptions } from './api/embedded-client.js';
export { EtcdError } from './node/errors.js';
export * from './mvcc/types.js';
export * from './etcd-db/index.js';
export * from './backup/index.js';

export interface Etcetera {
  readonly memberId: bigint;
  readonly clusterId: bigint;
  /** Client URLs with their bound ports. */
  readonly clientUrls: string[];
  readonly peerUrl: string;
  /** KV, Txn, Watch and Lease, called in process; under auth, `await client.authenticate(user, password)`. */
  readonly client: EmbeddedClient;
  /** The member's whole API (what the gRPC services call). */
  readonly api: RunningMember['server'];
  /** Called with the new leader's id on every change (0n while there is none). */
  onLeaderChange(listener: (leader: bigint) => void): () => void;
  /** Resolves if the member stops by itself (removed from the cluster, fatal disk error). */
  readonly stopped: Promise<{ reason: string }>;
  /** Graceful stop: hands leadership over first when leading, flushes everything. */
  close(): Promise<void>;
}

export async function startEtcetera(options: MemberOptionsInput = {}): Promise<Etcetera> {
  const logger = options.logger ?? createLogger({ level: 'warn' });
  const member = await startMember(withMemberDefaults(options, logger));
  return {
    memberId: member.memberId,
    clusterId: member.clusterId,
    clientUrls: member.clientUrls,
    peerUrl: member.peerUrl,
    client: new EmbeddedClient(member.server),
    api: member.server,
    onLeaderChange: (l) => member.server.onLeaderChange(l),
    stopped: member.stopped,
    close: () => member.close(),
  };
}
