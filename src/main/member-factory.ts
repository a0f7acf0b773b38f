/**
 * The one way a data member is built (issue 33): from ports (time and timers, its disk, its network) and its
 * options, the Raft driver, the server (src/node/etcd-server.ts) with its metrics, the peer RPCs, the member
 * list kept in the network, telling a removed member it is out, and the snapshot bridge (snapshot-bridge.ts).
 * member.ts calls it with the real scheduler, the data directory and the peer transport (member-network.ts);
 * the production-node simulator (test/sim/node/server-node.ts) with its seeded loop, simulated disk and
 * in-memory network, so the simulator's seeds run this wiring and a fault planted here fails them
 * (test/sim/node/wiring-self-test.test.ts). What only a process has (gRPC, HTTP, metrics endpoints, the
 * data directory's files) stays in member.ts.
 */
import { hex } from '../base/hex.js';
import type { Scheduler } from '../base/scheduler.js';
import type { HistogramSnapshot } from '../base/histogram.js';
import type { Snapshot } from '../raft/types.js';
import type { RawNode } from '../raft/raw-node.js';
import type { Backend } from '../mvcc/backend.js';
import type { MemberVersion } from '../base/version.js';
import { createServerMetrics, type ServerMetrics } from '../metrics/server-metrics.js';
import { EtcdServer } from '../node/etcd-server.js';
import type { EtcdServerParts } from '../node/etcd-server-parts.js';
import type { Member } from '../node/server-api.js';
import type { PeerCall } from '../node/peer-rpc.js';
import type { ServerState, StateOptions } from '../node/apply/server-state.js';
import { RaftDriver, ackBeforePersistDelayMs, type DriverApp, type DriverLog } from '../node/driver/raft-driver.js';
import { snapshotBridge, type SnapshotNetwork } from './snapshot-bridge.js';

/** What a data member writes to and reads from its disk (opened before it is built: storage.ts, or the simulator's). */
export interface DataMemberDisk {
  wal: DriverLog & { releaseTo(index: number): Promise<void>; readonly metrics: { readonly syncSeconds: HistogramSnapshot } };
  backend: Backend;
  state: ServerState;
  stateOptions: StateOptions;
  snapshotData: EtcdServerParts['snapshotData'];
  /** Where apply resumes, and the index of the log's latest snapshot. */
  applied: number;
  snapshotIndex: number;
}

/** A data member's peer network: Raft messages, streamed snapshots, peer RPCs, who its peers are. */
export interface MemberNetwork extends SnapshotNetwork {
  /** Where peers reach this member (a bound port resolved). */
  readonly peerUrls: string[];
  request: PeerCall;
  /** Keep the peers equal to the member list (this member excluded). */
  syncPeers(members: Member[]): void;
  /** One attempt to tell the member at `url` it was removed; resolves true once it heard. */
  tellRemoved(url: string, id: bigint): Promise<boolean>;
  /** The build and data format each peer announced (absent: none is known, no cluster version is decided). */
  peerVersions?(): ReadonlyMap<bigint, MemberVersion | null>;
}

export interface DataMemberPorts<N extends MemberNetwork> {
  /** Time and timers: the real ones, or the simulator's seeded loop. */
  scheduler: Scheduler;
  disk: DataMemberDisk;
  /** Opened once the driver it reports to exists (unreachable peers, how a snapshot stream ended). */
  network(driver: RaftDriver): N | Promise<N>;
}

/** What the factory fills from the ports; the rest of EtcdServerParts is the caller's. */
type PortParts = 'scheduler' | 'backend' | 'state' | 'stateOptions' | 'metrics' | 'saveSnapshot' | 'snapshotData' | 'releaseLog' | 'peerRequest' | 'syncPeers' | 'notifyRemoved' | 'peerUrls' | 'versions';

export interface DataMemberOptions extends Omit<EtcdServerParts, PortParts> {
  /** The Raft core, from what the log recovered (raft-node.ts, or the simulator's seeded one). */
  raft: RawNode;
  versions?: Omit<NonNullable<EtcdServerParts['versions']>, 'peers'>;
}

export interface DataMember<N extends MemberNetwork> {
  readonly driver: RaftDriver;
  readonly server: EtcdServer;
  readonly metrics: ServerMetrics;
  readonly network: N;
  /** Start the server and the driver (`app`: the driver's application, default the server's own). */
  start(app?: DriverApp): void;
}

/** How often, and how far apart, a removed member is told it is out (it may be briefly unreachable). */
const tellRemovedAttempts = 5;
const tellRemovedRetryMs = 1000;

export async function buildDataMember<N extends MemberNetwork>(ports: DataMemberPorts<N>, o: DataMemberOptions): Promise<DataMember<N>> {
  const { scheduler, disk } = ports;
  const { wal } = disk;
  const { raft, versions, ...parts } = o;
  const faults = o.unsafeTestFaults;
  const ackBeforePersist = faults?.has('ack-before-persist') === true;
  // Built first: the network feeds it and the server proposes through it; it does nothing until started.
  const driver = new RaftDriver(raft, {
    save: (u) => wal.save({ hardState: u.hardState, entries: u.entries, sync: u.sync }),
    saveSnapshot: (s) => wal.saveSnapshot(s),
  }, { tickIntervalMs: o.heartbeatMs, scheduler, unsafeAckBeforePersist: ackBeforePersist });
  const network = await ports.network(driver);
  const metrics = createServerMetrics({ walFsync: () => wal.metrics.syncSeconds });
  const log = o.logger;
  const tellRemoved = async (member: Member): Promise<void> => {
    const url = member.peerUrls[0];
    if (url === undefined) return;
    for (let attempt = 0; attempt < tellRemovedAttempts; attempt++) {
      if (await network.tellRemoved(url, member.id).catch(() => false)) return;
      await new Promise<void>((resolve) => scheduler.after(tellRemovedRetryMs, resolve));
    }
    log.info('could not tell a removed member it was removed', { member: hex(member.id) });
  };
  const server = new EtcdServer({
    ...parts,
    scheduler,
    backend: disk.backend,
    state: disk.state,
    stateOptions: disk.stateOptions,
    metrics,
    peerUrls: network.peerUrls,
    snapshotData: disk.snapshotData,
    // Under the ack-before-persist test fault the log receives saves late; snapshots must wait in the same line.
    saveSnapshot: (s: Snapshot) =>
      ackBeforePersist
        ? new Promise<void>((resolve) => scheduler.after(ackBeforePersistDelayMs, resolve)).then(() => wal.saveSnapshot(s))
        : wal.saveSnapshot(s),
    releaseLog: (index) => void wal.releaseTo(index).catch((error: unknown) => o.onFatal(error)),
    peerRequest: network.request,
    syncPeers: (members) => network.syncPeers(members),
    notifyRemoved: (member) => void tellRemoved(member),
    ...(versions !== undefined ? { versions: { ...versions, peers: () => network.peerVersions?.() ?? new Map() } } : {}),
  }, driver);
  // Test-only wiring fault: MsgSnap leaves as Raft made it, with no data, as if the bridge were forgotten.
  const peers = faults?.has('skip-snapshot-bridge') === true ? network : snapshotBridge(network, server, log);
  return {
    driver,
    server,
    metrics,
    network,
    start: (app) => server.start({ appliedIndex: disk.applied, snapshotIndex: disk.snapshotIndex, peers, ...(app !== undefined ? { app } : {}) }),
  };
}
