/**
 * The typed options of one etcetera member, as an embedding host passes them (the CLI maps its flags to
 * these). Names follow etcd's flags.
 */
import type { ProfileChoice } from '../wal/profiles.js';
import type { Logger } from './log.js';

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
}
