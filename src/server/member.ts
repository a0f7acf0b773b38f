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
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile, open as openFile } from 'node:fs/promises';
import { join } from 'node:path';
import { assert } from '../base/assert.js';
import { Prng } from '../base/prng.js';
import { quotaBackendBytesDefault, raftInflightMsgsMax, raftMsgBytesMax, raftUncommittedBytesMax } from '../base/limits.js';
import { LevelBackend } from '../mvcc/level-backend.js';
import { encodeConfChange } from '../raft/conf.js';
import { RawNode } from '../raft/raw-node.js';
import { EntryType, MessageType, type Entry, type HardState, type Message, type Snapshot } from '../raft/types.js';
import { Wal, type WalState } from '../wal/wal.js';
import type { Member } from './api.js';
import { EtcdError, type EtcdErrorCode, etcdErrors, fromMvccError } from './errors.js';
import { MvccError } from '../mvcc/types.js';
import { EtcdServer, electionTicksOf } from './etcd-server.js';
import { startGrpcServer, type GrpcServerHandle } from './grpc/server.js';
import type { ClusterBootstrap, MemberOptions } from './member-options.js';
import { encodeConfChangeContext } from './raft-request.js';
import { staticClusterIds } from './etcd-ids.js';
import { withAutoTls } from './auto-tls.js';
import { grpcOptionsOf, initialCheckHost, instrumentMember, noFsyncPort, peerTlsOf } from './member-etcd-options.js';
import { registerMemberMetrics } from './member-metrics.js';
import { initialCorruptCheck } from './initial-corrupt-check.js';
import { RaftDriver, ackBeforePersistDelayMs } from './raft-driver.js';
import { SnapshotDataDir } from './snapshot-data.js';
import { openIndexCheckpoint, removeIndexCheckpoint, saveIndexCheckpoint } from './index-checkpoint-file.js';
import { ServerState, type StateOptions } from './server-state.js';
import { createServerMetrics, type ServerMetrics } from './server-metrics.js';
import { PeerTransport } from './transport/transport.js';
import { createMetricsHandler, createVersionHandler, startMetricsHttp, type MetricsHttp, type MetricsRequestHandler, type HealthResult } from './http.js';
import { etcdVersion } from './grpc/maintenance-service.js';
import type { JoinResponse } from './cluster-ops.js';
import { resetToSingleMember } from './cluster-reset.js';
import type { SnapshotScheduler } from '../backup/snapshot-scheduler.js';
import { startScheduledSnapshots } from './scheduled-snapshots.js';

export interface Identity {
  memberId: bigint;
  clusterId: bigint;
  name: string;
  /**
   * The members known when this one joined: the peers to talk to until the replicated member list has
   * caught up (a new member learns it from the leader's log or snapshot, which needs a working transport).
   */
  joinPeers: Array<{ id: bigint; peerUrls: string[] }>;
}

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
  const memberDir = join(o.dataDir, 'member');
  await mkdir(memberDir, { recursive: true, mode: 0o700 });
  let fatal: (error: unknown) => void = (error) => {
    throw error;
  };
  const { wal, state: walState } = await Wal.open(o.walDir ?? join(memberDir, 'wal'), {
    profile: o.storageProfile,
    ...(o.unsafeNoFsync === true ? { fs: noFsyncPort() } : {}),
    logger: (line) => log.info(line),
    onFatal: (error) => fatal(error),
  });
  log.info('storage profile chosen', { profile: wal.profile, syncLatencyMs: wal.metrics.measuredSyncLatencyMs });
  const backend = await LevelBackend.open(join(memberDir, 'db'));
  const snapshotData = new SnapshotDataDir(join(memberDir, 'snap'));
  await snapshotData.init();
  const token = await resolveToken(o);

  let identity = await readIdentity(memberDir);
  const fresh = identity === undefined;
  if (fresh && walHasState(walState)) throw new Error(`${memberDir}: the log has data but no identity file; refusing to guess`);
  if (identity === undefined) {
    const decided = await bootstrapIdentity(o, token);
    identity = decided.identity;
    if (decided.entries.length > 0) {
      const last = decided.entries[decided.entries.length - 1]!;
      const hardState: HardState = { term: 1, vote: 0n, commit: last.index };
      await wal.save({ hardState, entries: decided.entries });
      walState.hardState = hardState;
      walState.entries = decided.entries;
    }
    await writeIdentity(memberDir, identity);
    log.info('bootstrapped member', { member: hex(identity.memberId), cluster: hex(identity.clusterId), mode: o.bootstrap.kind });
  } else {
    log.info('restarting member from its data directory', { member: hex(identity.memberId), cluster: hex(identity.clusterId) });
    if (o.forceNewCluster === true) {
      const self: Member = { id: identity.memberId, name: o.name, peerUrls: o.initialAdvertisePeerUrls, clientUrls: o.advertiseClientUrls, isLearner: false };
      Object.assign(walState, await resetToSingleMember(wal, walState, self, log));
    }
  }
  if (fresh && o.forceNewCluster === true) log.warn('--force-new-cluster on a new data directory: nothing to reset');

  const stateOptions: StateOptions = {
    quotaBackendBytes: o.quotaBackendBytes,
    minLeaseTtlSeconds: Math.ceil((3 * o.electionTimeoutMs) / 2 / 1000),
  };
  let state = await ServerState.load(backend, stateOptions, await openIndexCheckpoint(memberDir));
  await removeIndexCheckpoint(memberDir);
  log.info('loaded the key index', { keys: state.store.keyCount, ...state.store.loadedFrom });
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
      maxMsgBytes: raftMsgBytesMax,
      maxInflightMsgs: raftInflightMsgsMax,
      maxUncommittedBytes: raftUncommittedBytesMax,
      // A slow local fsync must not hold replies a quorum made durable; the store flushes only what is durable.
      applyUnstable: true,
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
        if (error instanceof MvccError) error = fromMvccError(error);
        if (error instanceof EtcdError) return { ok: false, error: error.message, code: error.code };
        return { ok: false, error: error instanceof Error ? error.message : String(error) };
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
  const { port: peerPort } = await transport.start();
  if (o.initialCorruptCheck === true && !fresh) {
    await initialCorruptCheck(initialCheckHost(identity.memberId, state, transport, o)).catch(async (error: unknown) => {
      await Promise.allSettled([transport.close(), wal.close(), backend.close()]);
      throw error;
    });
  }
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
    syncPeers: (members) => syncPeers(transport, identity!.memberId, members.length > 0 ? members : identity!.joinPeers),
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

  grpc = await startGrpcServer({
    api: server,
    listenUrls: o.listenClientUrls,
    leaderCheckIntervalMs: o.electionTimeoutMs,
    ...(o.clientTls !== undefined ? { tls: o.clientTls } : {}),
    ...grpcOptionsOf(o),
    metrics: grpcMetrics,
    http: clientPortHttp(server, metrics.registry),
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
}

const known = new WeakMap<PeerTransport, Set<bigint>>();

/** What the client port serves on HTTP/1.1 besides the JSON gateway, as etcd: /health, /version, /metrics. */
function clientPortHttp(server: EtcdServer, registry: ServerMetrics['registry']): MetricsRequestHandler {
  const routes = [createMetricsHandler({ registry, health: () => health(server) }), createVersionHandler(etcdVersion)];
  return (req, res) => routes.some((route) => route(req, res));
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

function peersOf(members: Member[]): Array<{ id: bigint; peerUrls: string[] }> {
  return members.map((m) => ({ id: m.id, peerUrls: m.peerUrls }));
}

function walHasState(s: WalState): boolean {
  return s.hardState.term > 0 || s.entries.length > 0 || s.snapshot.index > 0;
}

/** A new member: who am I, which cluster, and (for a new cluster) the bootstrap entries of its log. */
async function bootstrapIdentity(o: MemberOptions, token: string): Promise<{ identity: Identity; entries: Entry[] }> {
  const peerUrls = o.initialAdvertisePeerUrls;
  const b: ClusterBootstrap = o.bootstrap;
  switch (b.kind) {
    case 'init': {
      const memberId = idFrom(randomBytes(16).toString('hex'), ...peerUrls);
      const clusterId = idFrom(memberId.toString(16), randomBytes(16).toString('hex'));
      const self: Member = { id: memberId, name: o.name, peerUrls, clientUrls: o.advertiseClientUrls, isLearner: false };
      return { identity: { memberId, clusterId, name: o.name, joinPeers: [] }, entries: bootstrapEntries([self]) };
    }
    case 'static': {
      const { members, clusterId } = staticCluster(b.initialCluster, b.clusterToken);
      const self = members.find((m) => m.name === o.name);
      if (self === undefined) throw new Error(`--initial-cluster has no member named ${JSON.stringify(o.name)}`);
      if (b.state === 'new') return { identity: { memberId: self.id, clusterId, name: o.name, joinPeers: [] }, entries: bootstrapEntries(members) };
      // existing: the member was added with `member add`; find its id by its peer URLs.
      const found = await askCluster(o, token, b.initialCluster.flatMap((m) => m.peerUrls), 'members', {});
      const { members: current, clusterId: existingCluster } = found as { members: Member[]; clusterId: bigint };
      const me = current.find((m) => m.peerUrls.some((u) => peerUrls.includes(u)));
      if (me === undefined) throw new Error('this member is not in the existing cluster; add it first with `member add`');
      return { identity: { memberId: me.id, clusterId: existingCluster, name: o.name, joinPeers: peersOf(current) }, entries: [] };
    }
    case 'join': {
      const r = (await askCluster(o, token, [peerUrlOf(b.serverUrl)], 'join', {
        name: o.name,
        peerUrls,
        clientUrls: o.advertiseClientUrls,
      })) as JoinResponse;
      return { identity: { memberId: r.memberId, clusterId: r.clusterId, name: o.name, joinPeers: peersOf(r.members) }, entries: [] };
    }
  }
}

/** Ask any of `urls` (peer URLs of existing members), retrying for a while: the cluster may be electing. */
async function askCluster(o: MemberOptions, token: string, urls: string[], method: string, payload: unknown): Promise<unknown> {
  const transport = new PeerTransport({
    // Not a member yet: a throwaway id for the handshake (the token is what authenticates us).
    selfId: randomBytes(8).readBigUInt64BE(0) | 1n,
    token,
    listenUrl: '127.0.0.1:0',
    tls: peerTlsOf(o),
    logger: o.logger.child({ component: 'bootstrap' }),
    onMessages: () => {},
  });
  const deadline = Date.now() + Math.max(30_000, 10 * o.electionTimeoutMs);
  let lastError: unknown;
  try {
    while (Date.now() < deadline) {
      for (const url of urls) {
        try {
          const r = await transport.request(url, { method, payload });
          if (r.ok) return r.payload;
          lastError = new Error(r.error);
          if (r.code === undefined && /token|auth/i.test(r.error)) throw lastError;
        } catch (error) {
          lastError = error;
          if (error instanceof Error && error.name === 'PeerAuthError') throw error;
        }
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    await transport.close();
  }
  throw new Error(`could not ${method} through ${urls.join(', ')}: ${lastError instanceof Error ? lastError.message : String(lastError)}`);
}

/**
 * k3s gives the server URL of an existing member's client (supervisor) port; etcd-style peer URLs also work.
 * A URL on the client port is mapped to the peer port by convention (client 2379 → peer 2380).
 */
function peerUrlOf(serverUrl: string): string {
  const u = new URL(serverUrl);
  if (u.port === '2379') u.port = '2380';
  return u.toString().replace(/\/$/, '');
}

/** Member and cluster ids of a static bootstrap (`--initial-cluster`, `--initial-cluster-token`); also used by restore. */
export function staticCluster(initialCluster: Array<{ name: string; peerUrls: string[] }>, clusterToken: string): { members: Member[]; clusterId: bigint } {
  const ids = staticClusterIds(initialCluster, clusterToken);
  const members: Member[] = initialCluster.map((m) => ({
    id: ids.memberIds.get(m.name)!,
    name: m.name,
    peerUrls: m.peerUrls,
    clientUrls: [],
    isLearner: false,
  }));
  return { members, clusterId: ids.clusterId };
}

/** The log of a new cluster: one committed addVoter entry per initial member, carrying its attributes. */
export function bootstrapEntries(members: Member[]): Entry[] {
  return members.map((member, i) => ({
    term: 1,
    index: i + 1,
    type: EntryType.ConfChange,
    data: encodeConfChange({ type: 'addVoter', nodeId: member.id, context: encodeConfChangeContext({ id: 0n, member }) }),
  }));
}

function idFrom(...parts: string[]): bigint {
  const id = createHash('sha1').update(parts.join('\n')).digest().readBigUInt64BE(0);
  return id === 0n ? 1n : id;
}

async function resolveToken(o: MemberOptions): Promise<string> {
  const file = join(o.dataDir, 'token');
  if (o.token !== undefined && o.token !== '') return o.token;
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    // none yet
  }
  if (o.bootstrap.kind === 'join') throw new Error('--server needs --token (the token of the cluster to join)');
  if (o.bootstrap.kind === 'static') return o.bootstrap.clusterToken;
  const token = `K10${randomBytes(24).toString('hex')}`;
  await writeFileDurably(file, `${token}\n`, 0o600);
  o.logger.info('generated a join token', { file });
  return token;
}

async function readIdentity(memberDir: string): Promise<Identity | undefined> {
  let text: string;
  try {
    text = await readFile(join(memberDir, 'identity'), 'utf8');
  } catch {
    return undefined;
  }
  const j = JSON.parse(text) as { memberId: string; clusterId: string; name: string; joinPeers?: Array<{ id: string; peerUrls: string[] }> };
  return {
    memberId: BigInt(`0x${j.memberId}`),
    clusterId: BigInt(`0x${j.clusterId}`),
    name: j.name,
    joinPeers: (j.joinPeers ?? []).map((p) => ({ id: BigInt(`0x${p.id}`), peerUrls: p.peerUrls })),
  };
}

export async function writeIdentity(memberDir: string, id: Identity): Promise<void> {
  const text = JSON.stringify({
    memberId: hex(id.memberId),
    clusterId: hex(id.clusterId),
    name: id.name,
    joinPeers: id.joinPeers.map((p) => ({ id: hex(p.id), peerUrls: p.peerUrls })),
  });
  await writeFileDurably(join(memberDir, 'identity'), `${text}\n`, 0o600);
}

/** temp file, fsync, rename, directory fsync: never a name without its contents. */
async function writeFileDurably(path: string, text: string, mode: number): Promise<void> {
  const tmp = `${path}.tmp`;
  await writeFile(tmp, text, { mode });
  const fh = await openFile(tmp, 'r');
  await fh.sync();
  await fh.close();
  await rename(tmp, path);
  const dir = await openFile(join(path, '..'), 'r');
  await dir.sync();
  await dir.close();
}

function withPort(url: string, port: number): string {
  const u = new URL(url.includes('://') ? url : `http://${url}`);
  if (u.port === '0' || u.port === '') u.port = String(port);
  return `${u.protocol}//${u.host}`;
}

function hex(id: bigint): string {
  return id.toString(16);
}
