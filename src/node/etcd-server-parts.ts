/** What the composition root (main/member.ts) hands an EtcdServer: identity, storage, ports and knobs. */
import type { Backend } from '../mvcc/backend.js';
import type { SnapshotSource as StoreSnapshotSource } from '../mvcc/kv-store.js';
import type { Snapshot, SnapshotMeta } from '../raft/types.js';
import type { Member } from './api-types.js';
import type { AutoCompaction } from './periodic/auto-compactor.js';
import type { PeerCall } from './peer-rpc.js';
import type { ServerAuthOptions } from './access/server-auth.js';
import type { Logger } from '../config/log.js';
import type { ServerMetrics } from '../metrics/server-metrics.js';
import type { ServerState, StateOptions } from './apply/server-state.js';
import type { TestFault } from '../config/test-faults.js';
import type { Scheduler } from '../base/scheduler.js';
import type { MemberVersion } from '../base/version.js';
import { realScheduler } from './driver/real-scheduler.js';
import type { DiskRoom } from './request/disk-room.js';

export interface EtcdServerParts {
  /** Time and timers (default: the real ones; the simulator passes its own: test/sim/node). */
  scheduler?: Scheduler;
  /** Ids for members added by MemberAdd (default: crypto-random; the simulator passes its seeded generator). */
  randomMemberId?: () => bigint;
  /** etcd --max-request-bytes and --max-txn-ops (default: etcd's defaults). */
  requestLimits?: { requestBytesMax: number; txnOpsMax: number };
  /** etcd --experimental-watch-progress-notify-interval. */
  watchProgressIntervalMs?: number;
  memberId: bigint;
  clusterId: bigint;
  name: string;
  clientUrls: string[];
  peerUrls: string[];
  backend: Backend;
  state: ServerState;
  stateOptions: StateOptions;
  logger: Logger;
  metrics: ServerMetrics;
  heartbeatMs: number;
  electionMs: number;
  snapshotCount: number;
  /** Apply waits while this much applied state is not yet in the backend (default backendBacklogBytesMax). */
  backendBacklogBytesMax?: number;
  autoCompaction?: AutoCompaction;
  unsafeTestFaults?: Set<TestFault>;
  /** Where Maintenance.Snapshot builds its file (default the OS temp dir); `*.tmp` there is removed at start. */
  snapshotTempDir?: string;
  /** Persist a snapshot, then let the log release what it covers. */
  saveSnapshot(snapshot: Snapshot): Promise<void>;
  /** Received snapshot data (storage/snapshot-data.ts): read to restore, removed once the backend holds it durably. */
  snapshotData: {
    source(meta: SnapshotMeta): Promise<StoreSnapshotSource | undefined>;
    /** Remove the data of received snapshots up to this index (a newer one may wait for its restore). */
    removeThrough(index: number): Promise<void>;
  };
  releaseLog(index: number): void;
  /** Before a snapshot from the leader replaces the backend: drop what caches the old one (the key index checkpoint). */
  beforeBackendReplaced?(): Promise<void>;
  /** The peer transport's request RPC, for forwarding to the leader. */
  peerRequest: PeerCall;
  syncPeers(members: Member[]): void;
  onRemoved(): void;
  /** Best effort: tell a member removed by a committed change that it is out. */
  notifyRemoved(member: Member): void;
  onFatal(error: unknown): void;
  /**
   * This member's build and data format and what its peers announced (the peer handshake): the leader
   * decides the cluster version from them (periodic/cluster-version.ts). Absent (the simulator): none is decided.
   */
  versions?: {
    self: MemberVersion;
    peers(): ReadonlyMap<bigint, MemberVersion | null>;
    /** A committed cluster version was applied: the composition root records it in the data directory. */
    onClusterVersion(clusterVersion: string): void;
  };
  /** The disk's room for writes (main/disk-watch.ts keeps it current); absent, writes are not checked for disk space. */
  diskRoom?: DiskRoom;
  /** --auth-token, --auth-token-ttl, --bcrypt-cost, --client-cert-auth (defaults: etcd's). */
  auth?: ServerAuthOptions;
}

/** The server's time and timers: the parts' scheduler, or the real one. */
export function schedulerOf(parts: Pick<EtcdServerParts, 'scheduler'>): Scheduler {
  return parts.scheduler ?? realScheduler;
}
