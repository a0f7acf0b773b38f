/**
 * Starting and stopping one etcetera member: the composition root. Opens the data directory (WAL, backend),
 * decides between restart, new cluster, k3s-style join and etcd static bootstrap, and wires the Raft driver,
 * the replicated state, the peer transport and the gRPC server together.
 *
 * Data directory layout:
 *   <data-dir>/token              the join token (k3s: generated at --cluster-init when not given)
 *   <data-dir>/member/identity    member id, cluster id and name, written once at bootstrap
 *   <data-dir>/member/wal/        the durable Raft log and snapshot files (src/wal)
 *   <data-dir>/member/db/         the LevelDB backend (src/mvcc)
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Prng } from '../base/prng.js';
import { quotaBackendBytesDefault, raftInflightMsgsMax, raftMsgBytesMax, raftUncommittedBytesMax } from '../base/limits.js';
import { LevelBackend } from '../mvcc/level-backend.js';
import { RawNode } from '../raft/raw-node.js';
import { MessageType, type Message, type Snapshot } from '../raft/types.js';
import { Wal } from '../wal/wal.js';
import type { Member } from './api.js';
import { EtcdError, type EtcdErrorCode, etcdErrors, fromMvccError } from './errors.js';
import { MvccError } from '../mvcc/types.js';
import { EtcdServer, electionTicksOf } from './etcd-server.js';
import { startGrpcServer, type GrpcServerHandle } from './grpc/server.js';
import type { MemberOptions } from './member-options.js';
import { withAutoTls } from './auto-tls.js';
import { grpcOptionsOf, initialCheckHost, instrumentMember, noFsyncPort, peerTlsOf } from './member-etcd-options.js';
import { registerMemberMetrics } from './member-metrics.js';
import { initialCorruptCheck } from './initial-corrupt-check.js';
import { RaftDriver, ackBeforePersistDelayMs } from './raft-driver.js';
import { resetToSingleMember } from './cluster-reset.js';
import type { SnapshotScheduler } from '../backup/snapshot-scheduler.js';
import { startScheduledSnapshots } from './scheduled-snapshots.js';
import { SnapshotDataDir } from './snapshot-data.js';
import { directoryBytes } from './dir-bytes.js';
import { openIndexCheckpoint, removeIndexCheckpoint, saveIndexCheckpoint } from './index-checkpoint-file.js';
import { ServerState, type StateOptions } from './server-state.js';
import { createServerMetrics, type ServerMetrics } from './server-metrics.js';
import { PeerTransport } from './transport/transport.js';
import { createMetricsHandler, createVersionHandler, startMetricsHttp, type MetricsHttp, type MetricsRequestHandler, type HealthResult } from './http.js';
import { etcdVersion } from './grpc/maintenance-service.js';
import { askOptions, openOrBootstrap, type Identity } from './bootstrap.js';
export { bootstrapEntries, staticCluster, writeIdentity } from './bootstrap.js';
import { joinService, joinServiceDefinition } from './grpc/join-service.js';
import { askCluster } from './join-client.js';

export interface RunningMember {
  readonly memberId: bigint;
  readonly clusterId: bigint;
  readonly server: EtcdServer;
  /** Client URLs with the ports actually bound (port 0 resolved). */
  readonly clientUrls: string[];
  readonly peerUrl: string;
  readonly metrics: ServerMetrics;
  readonly wal: Wal;
  /** Resolves when the member stops by itself (removed from the cluster, or a fatal error). */
  readonly stopped: Promise<{ reason: string }>;
  close(): Promise<void>;
}

export async function startMember(options: MemberOptions): Promise<RunningMember> {
  const o = await withAutoTls(options);
  const log = o.logger;
  const boot = await openOrBootstrap(o);
  const { identity, token } = boot;
  log.info(boot.created ? 'bootstrapped member' : 'restarting member from its data directory', {
    member: hex(identity.memberId),
    cluster: hex(identity.clusterId),
    ...(boot.created ? { mode: o.bootstrap.kind } : {}),
  });
  try {
    // A bootstrap that was asked to measure the disk just did (and remembered it).
    const storageProfile = boot.created && o.storageProfile === 'remeasure' ? 'auto' : o.storageProfile;
    return await runMember({ ...o, storageProfile }, identity, token, boot.created);
  } catch (error) {
    // A member added for this start that cannot run must not stay in the cluster as an orphan learner.
    if (boot.created && o.bootstrap.kind === 'join') await leaveAfterFailedJoin(o, identity, token, o.bootstrap.serverUrl);
    throw error;
  }
}

async function leaveAfterFailedJoin(o: MemberOptions, identity: Identity, token: string, serverUrl: string): Promise<void> {
  try {
    await askCluster(askOptions(o, token), [serverUrl], 'memberRemove', { id: identity.memberId });
    await rm(join(o.dataDir, 'member'), { recursive: true, force: true });
    o.logger.warn('start failed after joining: removed this member from the cluster again; the next start joins afresh', { member: hex(identity.memberId) });
  } catch (error) {
    o.logger.error('start failed after joining, and removing this member again failed too: remove it with `etcdctl member remove`', {
      member: hex(identity.memberId),
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

async function runMember(o: MemberOptions, identity: Identity, token: string, fresh: boolean): Promise<RunningMember> {
  const log = o.logger;
  const memberDir = join(o.dataDir, 'member');
  // Until the server runs, a WAL failure also rejects the open or save that met it: nothing more to do.
  let fatal: (error: unknown) => void = () => {};
  // The backend first: its consistent index is committed, and the log must still reach it (a damaged last
  // record is then not a torn write, and the log is left untouched).
  const dbDir = join(memberDir, 'db');
  const backend = await LevelBackend.open(dbDir, { diskBytes: () => directoryBytes(dbDir) }).catch((error: unknown) => {
    if ((error as { code?: unknown }).code !== 'LEVEL_LOCKED' && !/lock/i.test(String((error as { cause?: unknown }).cause))) throw error;
    throw new Error(`${memberDir} is in use by another process; is another etcetera running on it?`);
  });
  const stateOptions: StateOptions = {
    quotaBackendBytes: o.quotaBackendBytes,
    minLeaseTtlSeconds: Math.ceil((3 * o.electionTimeoutMs) / 2 / 1000),
  };
  let state: ServerState;
  let opened: Awaited<ReturnType<typeof Wal.open>>;
  try {
    state = await ServerState.load(backend, stateOptions, await openIndexCheckpoint(memberDir));
    await removeIndexCheckpoint(memberDir);
    log.info('loaded the key index', { keys: state.store.keyCount, ...state.store.loadedFrom });
    opened = await Wal.open(o.walDir ?? join(memberDir, 'wal'), {
      profile: o.storageProfile,
      ...(o.unsafeNoFsync === true ? { fs: noFsyncPort() } : {}),
      logger: (line) => log.info(line),
      onFatal: (error) => fatal(error),
      appliedIndex: state.store.consistentIndex,
    });
  } catch (error) {
    await backend.close();
    throw error;
  }
  const { wal, state: walState } = opened;
  if (!fresh && o.forceNewCluster === true) {
    const self: Member = { id: identity.memberId, name: o.name, peerUrls: o.initialAdvertisePeerUrls, clientUrls: o.advertiseClientUrls, isLearner: false };
    Object.assign(walState, await resetToSingleMember(wal, walState, self, log));
  }
  if (fresh && o.forceNewCluster === true) log.warn('--force-new-cluster on a new data directory: nothing to reset');
  log.info('storage profile chosen', { profile: wal.profile, syncLatencyMs: wal.metrics.measuredSyncLatencyMs });
  // What a start that fails half-way must close again (the lock, the backend, listeners), in reverse order.
  const toClose: Array<() => Promise<unknown>> = [() => wal.close(), () => backend.close()];
  try {
    const snapshotData = new SnapshotDataDir(join(memberDir, 'snap'));
    await snapshotData.init();

    // The snapshot's data is read only when the backend is behind it (a crash before the backend caught up);
    // otherwise the metadata is enough, and a large key space is not read at every start.
    if (walState.snapshot.index > state.store.consistentIndex) {
      // Only a snapshot received from the leader can be ahead of the backend (a crash before its restore
      // finished): its data is in the snap directory, or (written by an older version) in the snapshot file.
      const meta = walState.snapshot;
      const received = await snapshotData.source(meta);
      const legacy = received === undefined ? await walState.loadSnapshot() : undefined;
      const source = received ?? (legacy !== undefined && legacy.data.length > 0 ? legacy.data : undefined);
      if (source === undefined) {
        throw new Error(
          `${memberDir}: the backend is at index ${state.store.consistentIndex}, behind the log's snapshot at ${meta.index}, ` +
          'and the snapshot data is gone; this member cannot recover on its own: remove it from the cluster, wipe its data directory and join again, or restore a backup',
        );
      }
      log.info('backend behind the latest snapshot; restoring it', { snapshotIndex: meta.index, consistentIndex: state.store.consistentIndex });
      state = await ServerState.restore(backend, source, stateOptions);
      await state.store.flushDurable();
    }
    await snapshotData.removeAll(); // what the backend holds, or a snapshot Raft never took
    const snapshot: Snapshot | undefined = walState.snapshot.index > 0 ? { meta: walState.snapshot, data: new Uint8Array(0) } : undefined;
    const applied = Math.max(state.store.consistentIndex, walState.snapshot.index);

    const node = new RawNode(
      {
        id: identity.memberId,
        electionTicks: electionTicksOf(o.electionTimeoutMs, o.heartbeatIntervalMs),
        heartbeatTicks: 1,
        preVote: o.preVote ?? true,
        checkQuorum: true,
        // A slow local fsync must not hold replies a quorum made durable; the store flushes only what is durable.
        applyUnstable: true,
        maxMsgBytes: raftMsgBytesMax,
        maxInflightMsgs: raftInflightMsgsMax,
        maxUncommittedBytes: raftUncommittedBytesMax,
        rng: new Prng(randomBytes(4).readUInt32BE(0)),
        logger: (line) => log.debug(line),
      },
      { hardState: walState.hardState, snapshot: walState.snapshot, entries: walState.entries, applied },
    );
    if (snapshot !== undefined) node.compact(snapshot, 0);

    const metrics = createServerMetrics();
    const grpcMetrics = instrumentMember(metrics.registry, backend);
    let resolveStopped!: (v: { reason: string }) => void;
    const stopped = new Promise<{ reason: string }>((r) => (resolveStopped = r));
    let server!: EtcdServer;
    let driver!: RaftDriver;
    const transport = new PeerTransport({
      selfId: identity.memberId,
      clusterId: identity.clusterId,
      token,
      listenUrl: o.listenPeerUrls[0]!,
      alsoListenUrls: o.listenPeerUrls.slice(1),
      tls: peerTlsOf(o),
      logger: log.child({ component: 'transport' }),
      onMessages: (msgs: Message[]) => driver?.step(msgs),
      onRequest: async (req) => {
        try {
          return { ok: true, payload: await server.handlePeerRequest(req.method, req.payload) };
        } catch (error) {
          return { ok: false, ...describePeerError(error) };
        }
      },
      onUnreachable: (id) => driver?.reportUnreachable(id),
      onSnapshotStatus: (id, ok) => driver?.reportSnapshot(id, ok),
      snapshotSink: snapshotData,
      onPeerRefused: (_id, reason) => {
        // A peer refuses us because the cluster removed this member while it was away.
        if (/removed/i.test(reason)) {
          log.warn('a peer refused this member: it was removed from the cluster; stopping', { reason });
          resolveStopped({ reason: 'removed from the cluster' });
          void close();
        }
      },
      authorizePeer: (from) => (server?.state.membership.isRemoved(from) ? 'the member was removed from the cluster' : undefined),
    });
    toClose.push(() => transport.close());
    const { port: peerPort } = await transport.start();
    if (o.initialCorruptCheck === true && !fresh) await initialCorruptCheck(initialCheckHost(identity.memberId, state, transport, o));
    const peerUrl = withPort(o.initialAdvertisePeerUrls[0] ?? o.listenPeerUrls[0]!, peerPort);

    const peerRequest = async (url: string, method: string, payload: unknown): Promise<unknown> => {
      const r = await transport.request(url, { method, payload });
      if (r.ok) return r.payload;
      if (r.code !== undefined && r.code in etcdErrors) throw new EtcdError(r.code as EtcdErrorCode);
      throw new Error(r.error);
    };

    let grpc: GrpcServerHandle | undefined;
    let metricsHttp: MetricsHttp | undefined;
    let scheduledSnapshots: SnapshotScheduler | undefined;
    let closing: Promise<void> | undefined;
    const close = (): Promise<void> =>
      (closing ??= (async () => {
        await scheduledSnapshots?.stop();
        await server.stop();
        await saveIndexCheckpoint(memberDir, server.state.store, log);
        await grpc?.close(500);
        await metricsHttp?.close();
        await transport.close();
        await wal.close();
        await backend.close();
      })());

    server = new EtcdServer({
      memberId: identity.memberId,
      clusterId: identity.clusterId,
      name: o.name,
      clientUrls: o.advertiseClientUrls,
      peerUrls: [peerUrl],
      backend,
      state,
      stateOptions,
      logger: log,
      metrics,
      heartbeatMs: o.heartbeatIntervalMs,
      electionMs: o.electionTimeoutMs,
      snapshotCount: o.snapshotCount,
      ...(o.grpcLimits !== undefined ? { requestLimits: o.grpcLimits } : {}),
      ...(o.watchProgressNotifyIntervalMs !== undefined ? { watchProgressIntervalMs: o.watchProgressNotifyIntervalMs } : {}),
      ...(o.autoCompaction !== undefined ? { autoCompaction: o.autoCompaction } : {}),
      ...(o.unsafeTestFaults !== undefined && o.unsafeTestFaults.size > 0 ? { unsafeTestFaults: o.unsafeTestFaults } : {}),
      // Under the ack-before-persist test fault the log receives saves late; snapshots must wait in the same line.
      snapshotData,
      snapshotTempDir: snapshotData.dir,
      saveSnapshot: (s) =>
        o.unsafeTestFaults?.has('ack-before-persist') === true
          ? new Promise<void>((resolve, reject) => setTimeout(() => wal.saveSnapshot(s).then(resolve, reject), ackBeforePersistDelayMs))
          : wal.saveSnapshot(s),
      releaseLog: (index) => void wal.releaseTo(index).catch((error: unknown) => fatal(error)),
      peerRequest,
      syncPeers: (members) => syncPeers(transport, identity.memberId, members.length > 0 ? members : identity.joinPeers),
      onRemoved: () => {
        resolveStopped({ reason: 'removed from the cluster' });
        void close();
      },
      notifyRemoved: (member) => void notifyRemoved(transport, member, log),
      onFatal: (error) => fatal(error),
      auth: {
        ...(o.auth !== undefined ? { authToken: o.auth.token, authTokenTtlSeconds: o.auth.tokenTtlSeconds, bcryptCost: o.auth.bcryptCost } : {}),
        clientCertAuth: o.clientTls?.clientCertAuth === true,
      },
    });
    fatal = (error) => {
      log.error('fatal error; stopping', { error: error instanceof Error ? error.message : String(error) });
      resolveStopped({ reason: `fatal: ${error instanceof Error ? error.message : String(error)}` });
      void close().catch(() => {});
    };
    driver = new RaftDriver(node, {
      save: (u) => wal.save({ hardState: u.hardState, entries: u.entries, sync: u.sync }),
      saveSnapshot: (s) => wal.saveSnapshot(s),
    }, snapshotStreamingTransport(transport, server, log), server.driverApp(), {
      tickIntervalMs: o.heartbeatIntervalMs,
      unsafeAckBeforePersist: o.unsafeTestFaults?.has('ack-before-persist') === true,
    });
    server.start(driver, applied, walState.snapshot.index);
    toClose.push(() => close());

    grpc = await startGrpcServer({
      api: server,
      listenUrls: o.listenClientUrls,
      leaderCheckIntervalMs: o.electionTimeoutMs,
      ...(o.clientTls !== undefined ? { tls: o.clientTls } : {}),
      ...grpcOptionsOf(o),
      metrics: grpcMetrics,
      http: clientPortHttp(server, metrics.registry),
      services: [{
        definition: joinServiceDefinition,
        implementation: joinService({ token, handle: (method, payload) => server.handlePeerRequest(method, payload), describeError: describePeerError }),
      }],
    });
    const clientUrls = o.listenClientUrls.map((u, i) => withPort(u, grpc!.ports[i]!));
    metrics.walFsync = () => wal.metrics.syncSeconds;
    metrics.registry.onCollect(() => collectServerMetrics(server, metrics));
    registerMemberMetrics({ registry: metrics.registry, memberId: identity.memberId, server, wal, transport, quotaBackendBytes: o.quotaBackendBytes || quotaBackendBytesDefault, grpc: grpcMetrics });
    if (o.listenMetricsUrls.length > 0) {
      metricsHttp = await startMetricsHttp({
        listenUrls: o.listenMetricsUrls,
        registry: metrics.registry,
        health: () => health(server),
        ready: () => health(server),
        logger: log,
      });
    }
    if (o.scheduledSnapshots !== undefined) {
      scheduledSnapshots = startScheduledSnapshots({
        options: o.scheduledSnapshots, nodeName: o.name, store: { exportSnapshot: () => server.state.store.exportSnapshot() },
        serverVersion: etcdVersion, registry: metrics.registry, logger: log,
      });
    }
    log.info('serving client requests', { clientUrls, peerUrl });

    return {
      memberId: identity.memberId,
      clusterId: identity.clusterId,
      server,
      clientUrls,
      peerUrl,
      metrics,
      wal,
      stopped,
      close,
    };
  } catch (error) {
    for (const closeOne of toClose.reverse()) await closeOne().catch(() => undefined);
    throw error;
  }
}

const known = new WeakMap<PeerTransport, Set<bigint>>();

/** What the client port serves on HTTP/1.1 besides the JSON gateway, as etcd: /health, /version, /metrics. */
function clientPortHttp(server: EtcdServer, registry: ServerMetrics['registry']): MetricsRequestHandler {
  const routes = [createMetricsHandler({ registry, health: () => health(server) }), createVersionHandler(etcdVersion)];
  return (req, res) => routes.some((route) => route(req, res));
}

/** An error answered to a peer or a joiner: etcd's message and code when it is one of etcd's errors. */
function describePeerError(error: unknown): { error: string; code?: string } {
  if (error instanceof MvccError) error = fromMvccError(error);
  if (error instanceof EtcdError) return { error: error.message, code: error.code };
  return { error: error instanceof Error ? error.message : String(error) };
}

/**
 * etcd's /health: healthy when there is a leader, no alarm is raised, and a linearizable read succeeds
 * (the read proves the member can reach a quorum now, not just that it saw a leader once).
 */
async function health(server: EtcdServer): Promise<HealthResult> {
  if (!server.hasLeader()) return { health: false, reason: 'RAFT NO LEADER' };
  const alarms = server.state.alarms.list();
  if (alarms.length > 0) return { health: false, reason: `ALARM ${alarms.map((a) => a.alarm).join(',')}` };
  try {
    await server.linearizableBarrier({ requireLeader: true, signal: AbortSignal.timeout(5000) });
  } catch (error) {
    return { health: false, reason: `QGET ERROR: ${error instanceof Error ? error.message : String(error)}` };
  }
  return { health: true, reason: '' };
}

function collectServerMetrics(server: EtcdServer, m: ServerMetrics): void {
  m.hasLeader.set(server.hasLeader() ? 1 : 0);
  m.isLeader.set(server.isLeader ? 1 : 0);
  const status = server.driver.status();
  m.proposalsCommitted.set(status.commit);
  m.proposalsApplied.set(server.applied);
  m.proposalsPending.set(server.pendingProposals);
  m.dbTotalSize.set(server.state.store.dbSizeBytes());
}

/**
 * The Raft core keeps only its latest snapshot's metadata (a member's own snapshots are markers; the backend
 * is the data). When a MsgSnap leaves, the backend is streamed to the follower from a consistent view, with
 * metadata for the index that view holds (etcd's merged snapshot message), so no copy of the key space is
 * ever held in memory.
 */
function snapshotStreamingTransport(transport: PeerTransport, server: EtcdServer, log: MemberOptions['logger']): { send(msgs: Message[]): void } {
  const stream = async (m: Message): Promise<void> => {
    let exported: Awaited<ReturnType<EtcdServer['snapshotForFollower']>>;
    try {
      exported = await server.snapshotForFollower();
    } catch (error) {
      log.warn('cannot export a snapshot for a follower yet', { peer: m.to.toString(16), error: (error as Error).message });
      return server.driver.reportSnapshot(m.to, false);
    }
    try {
      await transport.sendSnapshot({ ...m, snapshot: { meta: exported.meta, data: new Uint8Array(0) } }, exported.chunks);
    } catch {
      // reported to Raft through onSnapshotStatus
    } finally {
      await exported.close();
    }
  };
  return {
    send(msgs: Message[]): void {
      const ready: Message[] = [];
      for (const m of msgs) {
        if (m.type === MessageType.Snap && m.snapshot !== undefined && m.snapshot.data.length === 0) void stream(m);
        else ready.push(m);
      }
      if (ready.length > 0) transport.send(ready);
    },
  };
}

/** Tell a removed member it is out, a few times over a few seconds; it may be briefly unreachable. */
async function notifyRemoved(transport: PeerTransport, member: Member, log: MemberOptions['logger']): Promise<void> {
  const url = member.peerUrls[0];
  if (url === undefined) return;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const r = await transport.request(url, { method: 'removed', payload: { id: member.id } }, { timeoutMs: 2000 });
      if (r.ok) return;
    } catch {
      // unreachable: try again shortly
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  log.info('could not tell a removed member it was removed', { member: hex(member.id) });
}

function syncPeers(transport: PeerTransport, self: bigint, members: Array<{ id: bigint; peerUrls: string[] }>): void {
  const wanted = new Set<bigint>();
  for (const m of members) {
    if (m.id === self || m.peerUrls.length === 0) continue;
    wanted.add(m.id);
    if (transport.hasPeer(m.id)) transport.updatePeer(m.id, m.peerUrls);
    else transport.addPeer(m.id, m.peerUrls);
  }
  for (const id of known.get(transport) ?? []) if (!wanted.has(id)) transport.removePeer(id);
  known.set(transport, wanted);
}

function withPort(url: string, port: number): string {
  const u = new URL(url.includes('://') ? url : `http://${url}`);
  if (u.port === '0' || u.port === '') u.port = String(port);
  return `${u.protocol}//${u.host}`;
}

function hex(id: bigint): string {
  return id.toString(16);
}
