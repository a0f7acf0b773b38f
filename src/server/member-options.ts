/**
 * The typed options of one etcetera member, as an embedding host passes them (the CLI maps its flags to
 * these). Names follow etcd's flags.
 */
import type { ProfileChoice } from '../wal/profiles.js';
import type { Logger } from './log.js';
import type { TestFault } from './test-faults.js';

export type ClusterBootstrap =
  /** k3s `--cluster-init`: a new cluster with this member as its only voter. */
  | { kind: 'init' }
  /** k3s `--server URL --token T`: join through any member, as a learner promoted once caught up. */
  | { kind: 'join'; serverUrl: string }
  /** etcd's static bootstrap: `--initial-cluster` with `--initial-cluster-state new|existing`. */
  | { kind: 'static'; initialCluster: Array<{ name: string; peerUrls: string[] }>; state: 'new' | 'existing'; clusterToken: string };

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  trustedCaFile?: string;
  clientCertAuth?: boolean;
}

export interface MemberOptions {
  name: string;
  dataDir: string;
  listenClientUrls: string[];
  advertiseClientUrls: string[];
  listenPeerUrls: string[];
  initialAdvertisePeerUrls: string[];
  listenMetricsUrls: string[];
  heartbeatIntervalMs: number;
  electionTimeoutMs: number;
  snapshotCount: number;
  quotaBackendBytes: number;
  autoCompaction?: { mode: 'periodic' | 'revision'; retention: string };
  storageProfile: ProfileChoice;
  bootstrap: ClusterBootstrap;
  /** The join token; for `init` without one, generated and written to `<data-dir>/token`. */
  token?: string;
  clientTls?: TlsFiles;
  peerTls?: TlsFiles;
  logger: Logger;
  /** Test-only: break the server on purpose (src/server/test-faults.ts). Never set in production. */
  unsafeTestFaults?: Set<TestFault>;
}

/** What an embedding host must give; everything else has etcd's default. */
export type MemberOptionsInput = Partial<Omit<MemberOptions, 'logger'>> & { logger?: Logger };

/**
 * Fill in etcd's defaults (name "default", data dir "./etcetera-data", client 127.0.0.1:2379, peer
 * 127.0.0.1:2380, heartbeat 100 ms, election 1000 ms) and reject inconsistent options.
 */
export function withMemberDefaults(input: MemberOptionsInput, logger: Logger): MemberOptions {
  const listenClientUrls = input.listenClientUrls ?? ['http://127.0.0.1:2379'];
  const listenPeerUrls = input.listenPeerUrls ?? ['http://127.0.0.1:2380'];
  const o: MemberOptions = {
    name: input.name ?? 'default',
    dataDir: input.dataDir ?? './etcetera-data',
    listenClientUrls,
    advertiseClientUrls: input.advertiseClientUrls ?? listenClientUrls,
    listenPeerUrls,
    initialAdvertisePeerUrls: input.initialAdvertisePeerUrls ?? listenPeerUrls,
    listenMetricsUrls: input.listenMetricsUrls ?? [],
    heartbeatIntervalMs: input.heartbeatIntervalMs ?? 100,
    electionTimeoutMs: input.electionTimeoutMs ?? 1000,
    snapshotCount: input.snapshotCount ?? 10_000,
    quotaBackendBytes: input.quotaBackendBytes ?? 0,
    storageProfile: input.storageProfile ?? 'auto',
    bootstrap: input.bootstrap ?? { kind: 'init' },
    logger: input.logger ?? logger,
    ...(input.autoCompaction !== undefined ? { autoCompaction: input.autoCompaction } : {}),
    ...(input.token !== undefined ? { token: input.token } : {}),
    ...(input.clientTls !== undefined ? { clientTls: input.clientTls } : {}),
    ...(input.peerTls !== undefined ? { peerTls: input.peerTls } : {}),
  };
  if (o.electionTimeoutMs < 5 * o.heartbeatIntervalMs) {
    throw new TypeError(`election timeout ${o.electionTimeoutMs} ms must be at least 5 × the heartbeat interval (${o.heartbeatIntervalMs} ms), as etcd requires`);
  }
  if (o.snapshotCount < 1) throw new TypeError('snapshotCount must be positive');
  return o;
}
