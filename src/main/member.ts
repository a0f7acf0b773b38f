/**
 * Starting and stopping one etcetera member: the composition root. Bootstrap (bootstrap.ts) decides between
 * restart, new cluster, k3s-style join and etcd static bootstrap; storage.ts opens the WAL and the backend;
 * this file builds, in dependency order, the stop sequence (member-stop.ts), the data member through the one
 * factory the simulator also runs (member-factory.ts: Raft driver, server, snapshot bridge) on the peer
 * transport with its port bound (member-network.ts), which the server then serves, and the gRPC server, and
 * starts them.
 *
 * Data directory layout:
 *   <data-dir>/token              the join token (k3s: generated at --cluster-init when not given)
 *   <data-dir>/member/identity    member id, cluster id and name, written once at bootstrap
 *   <data-dir>/member/wal/        the durable Raft log and snapshot files (src/wal); or --wal-dir (storage/wal-dir.ts)
 *   <data-dir>/member/db/         the LevelDB backend (src/mvcc)
 */
import { buildVersion } from '../config/build-info.js';
import { dataFormatVersion } from '../base/version.js';
import { DataVersionRecorder, readDataVersion } from './data-version.js';
import { join, resolve } from 'node:path';
import { hex } from '../base/hex.js';
import { quotaBackendBytesDefault } from '../base/limits.js';
import type { Wal } from '../wal/wal.js';
import { startGrpcServer, type GrpcServerHandle } from '../api/grpc/server.js';
import type { MemberOptions } from '../config/member-options.js';
import { withAutoTls } from '../tls/auto-tls.js';
import { grpcOptionsOf, initialCheckHost, instrumentMember } from './member-etcd-options.js';
import { registerMemberMetrics } from '../metrics/member-metrics.js';
import { initialCorruptCheck } from '../node/corruption/initial-corrupt-check.js';
import { saveIndexCheckpoint } from '../storage/index-checkpoint-file.js';
import type { EtcdServer } from '../node/etcd-server.js';
import type { ServerMetrics } from '../metrics/server-metrics.js';
import { IndexCheckpointKeeper } from './index-checkpoint-keeper.js';
import { timedExporter } from '../node/maintenance/timed-snapshot.js';
import { registerTransportMetrics } from '../peer/transport-metrics.js';
import { startPeerProber } from '../peer/peer-prober.js';
import { startMetricsHttp } from '../metrics/metrics-http.js';
import { etcdVersion } from '../node/maintenance/maintenance-ops.js';
import { adoptToken, leaveAfterFailedJoin, openOrBootstrap } from './bootstrap.js';
import { writeIdentity, type Identity } from '../storage/identity.js';
import type { Member } from '../node/api-types.js';
import { joinService, joinServiceDefinition } from '../join/join-service.js';
import { clientPortHttp, collectServerMetrics, countedHealth, health } from './client-http.js';
import { describePeerError, withPort } from './peers.js';
import { buildDataMember } from './member-factory.js';
import { openPeerNetwork } from './member-network.js';
import { realScheduler } from '../node/driver/real-scheduler.js';
import { createRawNode } from './raft-node.js';
import { peerUrlMismatch, urlsOf, withRegisteredUrls, withRememberedWalDir } from './registered-urls.js';
import { openMemberStorage } from './storage.js';
import { checkRestart } from './start-checks.js';
import { startDiskWatch, startOnFullDiskError } from './disk-watch.js';
import { DiskRoom } from '../node/request/disk-room.js';
import { isSecretToken, joinsRefusedMessage, joinsRefusedWarning } from '../join/join-secret.js';
import { openPeerPortWarning } from './open-peer-port.js';
import { registerClientTraffic } from '../metrics/client-traffic.js';
import { WearWatch } from './wear-watch.js';
import { registerWearMetrics } from '../metrics/wear-metrics.js';
import { createJsonHandler } from '../metrics/metrics-http.js';
import { memberStatus } from './member-status.js';
import { MemberStop } from './member-stop.js';

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
  try {
    return await startMemberOn(options);
  } catch (error) {
    // Wherever a start meets a full disk (the log's lock or profile memo, a segment, the backend, a
    // checkpoint), it says so and what to delete, never a bare ENOSPC (issue 32).
    throw (await startOnFullDiskError(options, error)) ?? error;
  }
}

async function startMemberOn(options: MemberOptions): Promise<RunningMember> {
  let o = await withAutoTls(options);
  const log = o.logger;
  const boot = await openOrBootstrap(o);
  const { identity, token } = boot;
  log.info(boot.created ? 'bootstrapped member' : 'restarting member from its data directory', {
    member: hex(identity.memberId),
    cluster: hex(identity.clusterId),
    ...(boot.created ? { mode: o.bootstrap.kind } : {}),
  });
  if (!boot.created) o = withRememberedWalDir(o, identity);
  // A restart is checked read-only first: a refused start changes no file (start-checks.ts).
  if (!boot.created) await checkRestart(o, identity);
  if (boot.adoptToken === true) await adoptToken(o, identity, token);
  const openPeerPort = openPeerPortWarning(o, token);
  if (openPeerPort !== undefined) log.warn(openPeerPort);
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

/** The stop's stages, in the stop's order (see member-stop.ts). */
// etcd's order: a leader hands over, the client port stops taking calls while those in flight finish through
// the new leader (streams are cut after a grace), then the node stops and flushes.
const memberStopOrder = ['snapshots', 'disk watch', 'wear', 'prober', 'handover', 'grpc', 'server', 'checkpoint', 'metrics', 'transport', 'wal', 'backend'] as const;

async function runMember(o: MemberOptions, identity: Identity, token: string, fresh: boolean): Promise<RunningMember> {
  const log = o.logger;
  const memberDir = join(o.dataDir, 'member');
  const stop = new MemberStop(log, memberStopOrder, 'stopped');
  // Until the member runs, a WAL failure also rejects the open or save that met it, and the start fails.
  const storage = await openMemberStorage(o, identity, fresh, (error) => stop.fatal(error));
  const { backend, state, stateOptions, wal, walState, snapshotData, applied } = storage;
  stop.add('wal', () => wal.close());
  stop.add('backend', () => backend.close());
  try {
    if (!fresh) o = await restartUrls(o, identity, state.membership.get(identity.memberId));
    const refused = joinsRefusedWarning(token);
    if (refused !== undefined) log.warn(refused);

    const wear = new WearWatch({
      enduranceTbw: o.storageEnduranceTbw,
      warningYears: o.storageLifeWarningYears,
      walBytes: () => wal.metrics.bytesWritten + wal.metrics.preallocatedBytes,
      backendBytes: () => backend.writtenBytes(),
      fsyncSeconds: () => wal.metrics.syncSeconds,
      logger: log,
    });
    stop.add('wear', () => wear.stop());
    const build = buildVersion();
    const dataVersion = new DataVersionRecorder(memberDir, build, await readDataVersion(memberDir), (error) => stop.fatal(error));
    // Counts the disk's room on the write path; the disk watch, started below, keeps it current.
    const diskRoom = new DiskRoom();
    // Built before the server, which calls it before a snapshot from the leader replaces the backend; started after.
    const keeper = new IndexCheckpointKeeper({ memberDir, log, onFatal: (error) => stop.fatal(error) });
    const member = await buildDataMember({
      scheduler: realScheduler,
      disk: { wal, backend, state, stateOptions, snapshotData, applied, snapshotIndex: walState.snapshot.index },
      // The peer port is bound now (the member is built with its URL) and served once the server that answers it exists.
      network: async (driver) => {
        const network = await openPeerNetwork(o, identity, token, driver, () => stop.request('removed from the cluster'));
        stop.add('transport', () => network.transport.close());
        if (o.initialCorruptCheck === true && !fresh) await initialCorruptCheck(initialCheckHost(identity.memberId, state, network.transport, o));
        return network;
      },
    }, {
      raft: createRawNode(o, identity.memberId, storage),
      diskRoom,
      memberId: identity.memberId,
      clusterId: identity.clusterId,
      name: o.name,
      clientUrls: o.advertiseClientUrls,
      logger: log,
      heartbeatMs: o.heartbeatIntervalMs,
      electionMs: o.electionTimeoutMs,
      snapshotCount: o.snapshotCount,
      ...(o.grpcLimits !== undefined ? { requestLimits: o.grpcLimits } : {}),
      ...(o.watchProgressNotifyIntervalMs !== undefined ? { watchProgressIntervalMs: o.watchProgressNotifyIntervalMs } : {}),
      ...(o.autoCompaction !== undefined ? { autoCompaction: o.autoCompaction } : {}),
      ...(o.unsafeTestFaults !== undefined && o.unsafeTestFaults.size > 0 ? { unsafeTestFaults: o.unsafeTestFaults } : {}),
      snapshotTempDir: snapshotData.dir,
      beforeBackendReplaced: () => keeper.invalidate(),
      onRemoved: () => stop.request('removed from the cluster'),
      onFatal: (error) => stop.fatal(error),
      versions: { self: { build, dataFormat: dataFormatVersion }, onClusterVersion: (v) => dataVersion.applied(v) },
      auth: {
        ...(o.auth !== undefined ? { authToken: o.auth.token, authTokenTtlSeconds: o.auth.tokenTtlSeconds, bcryptCost: o.auth.bcryptCost } : {}),
        clientCertAuth: o.clientTls?.clientCertAuth === true,
      },
    });
    const { server, metrics, network: { transport } } = member;
    const peerUrl = member.network.peerUrls[0]!;
    const grpcMetrics = instrumentMember(metrics.registry, backend);
    // Both doors a join comes through (the client port's Join service, the peer port's RPCs) refuse joins
    // while the token is public.
    const joinsAccepted = isSecretToken(token);
    const peerRequestGate = (method: string, payload: unknown): Promise<unknown> =>
      !joinsAccepted && method === 'join' ? Promise.reject(new Error(joinsRefusedMessage)) : server.handlePeerRequest(method, payload);
    transport.serve({
      onMessages: (msgs) => member.driver.step(msgs),
      onRequest: async (req) => {
        try {
          return { ok: true, payload: await peerRequestGate(req.method, req.payload) };
        } catch (error) {
          return { ok: false, ...describePeerError(error) };
        }
      },
      // A snapshot is admitted chunk by chunk only while its restore fits above the disk's reserve (disk-room.ts).
      snapshotSink: snapshotData.receiver(
        { fsyncSeconds: (s) => metrics.snapDbFsyncSeconds.observe(s), saveSeconds: (s) => metrics.snapDbSaveSeconds.observe(s) },
        () => diskRoom.receiveSnapshot(server.state.store.dbSizeBytes()),
      ),
      authorizePeer: (from) => (server.state.membership.isRemoved(from) ? { code: 'removed', reason: 'the member was removed from the cluster' } : undefined),
    });
    // A cluster version applied before a crash that came before its record was written.
    if (state.membership.clusterVersion !== undefined) dataVersion.applied(state.membership.clusterVersion);
    member.start();
    stop.add('handover', () => server.handOver());
    stop.add('server', () => server.stop());
    keeper.start(() => server.state.store, () => server.state.alarms.list().some((a) => a.alarm === 'NOSPACE' && a.memberId === identity.memberId));
    stop.add('checkpoint', async () => {
      await keeper.stop();
      await saveIndexCheckpoint(memberDir, server.state.store, log);
    });

    // Built before /status, which reports it; it loads the S3 client only at its first upload. Its modules
    // (and the snapshot reader they check files with) load only when configured (issue 34).
    const offsite = o.etcdS3 !== undefined && o.scheduledSnapshots !== undefined
      ? (await import('../backup/offsite-snapshots.js')).createOffsiteUploads({ s3: o.etcdS3, nodeName: o.name, retention: o.scheduledSnapshots.retention, registry: metrics.registry, logger: log })
      : undefined;
    const statusRoute = createJsonHandler('/status', () => memberStatus(server, { name: o.name, storageProfile: wal.profile, wear, ...(offsite !== undefined ? { offsite } : {}) }));
    const grpc: GrpcServerHandle = await startGrpcServer({
      api: server,
      listenUrls: o.listenClientUrls,
      leaderCheckIntervalMs: o.electionTimeoutMs,
      every: (ms, fn) => server.every(ms, fn),
      ...(o.clientTls !== undefined ? { tls: o.clientTls } : {}),
      ...grpcOptionsOf(o),
      metrics: grpcMetrics,
      http: clientPortHttp(server, metrics, [statusRoute]),
      services: [{
        definition: joinServiceDefinition,
        implementation: joinService({ token, handle: peerRequestGate, describeError: describePeerError }),
      }],
    });
    stop.add('grpc', () => grpc.close(500));
    const clientUrls = o.listenClientUrls.map((u, i) => withPort(u, grpc.ports[i]!));
    registerClientTraffic(metrics.registry, () => grpc.trafficBytes());
    metrics.registry.onCollect(() => collectServerMetrics(server, metrics));
    registerMemberMetrics({ registry: metrics.registry, memberId: identity.memberId, etcdVersion, server, wal, quotaBackendBytes: o.quotaBackendBytes || quotaBackendBytesDefault, grpc: grpcMetrics, backendOpenReads: () => backend.openReads });
    registerTransportMetrics(metrics.registry, transport, identity.memberId);
    registerWearMetrics(metrics.registry, wear);
    const prober = startPeerProber({
      transport,
      registry: metrics.registry,
      every: (ms, fn) => server.every(ms, fn),
      peers: () => server.state.membership.list().flatMap((m) => (m.id !== identity.memberId && m.peerUrls[0] !== undefined ? [{ id: m.id, url: m.peerUrls[0] }] : [])),
    });
    stop.add('prober', () => prober.stop());
    if (o.listenMetricsUrls.length > 0) {
      const metricsHttp = await startMetricsHttp({
        listenUrls: o.listenMetricsUrls,
        registry: metrics.registry,
        health: () => countedHealth(server, metrics),
        ready: () => health(server),
        routes: [statusRoute],
        logger: log,
      });
      stop.add('metrics', () => metricsHttp.close());
    }
    if (o.scheduledSnapshots !== undefined) {
      const { startScheduledSnapshots } = await import('../backup/scheduled-snapshots.js');
      const scheduledSnapshots = startScheduledSnapshots({
        options: o.scheduledSnapshots, nodeName: o.name, store: timedExporter({ exportSnapshot: () => server.state.store.exportSnapshot() }, metrics.backendSnapshotSeconds, () => performance.now()),
        serverVersion: etcdVersion, registry: metrics.registry, logger: log, ...(offsite !== undefined ? { offsite } : {}),
      });
      stop.add('snapshots', async () => {
        await scheduledSnapshots.stop();
        await offsite?.stop();
      });
    }
    const diskWatch = await startDiskWatch(o, identity.memberId, server, diskRoom);
    stop.add('disk watch', () => diskWatch.stop());
    wear.start((ms, fn) => server.every(ms, fn));
    stop.arm();
    log.info('serving client requests', { clientUrls, peerUrl });

    return {
      memberId: identity.memberId,
      clusterId: identity.clusterId,
      server,
      clientUrls,
      peerUrl,
      metrics,
      wal,
      stopped: stop.stopped,
      close: () => stop.run(),
    };
  } catch (error) {
    await stop.run().catch(() => undefined);
    throw error;
  }
}

/** A restart listens where the member registered unless told otherwise, and says so loudly when it is told otherwise. */
async function restartUrls(o: MemberOptions, identity: Identity, known: Member | undefined): Promise<MemberOptions> {
  const { options, adopted } = withRegisteredUrls(o, identity.urls, known);
  if (adopted.length > 0) {
    o.logger.info('restarting with the URLs this member registered', Object.fromEntries(adopted.map((k) => [k, options[k]])));
  }
  const mismatch = peerUrlMismatch(options, known);
  if (mismatch !== undefined) options.logger.warn(mismatch);
  const urls = urlsOf(options);
  const walDir = options.walDir === undefined ? undefined : resolve(options.walDir);
  if (JSON.stringify(urls) !== JSON.stringify(identity.urls) || walDir !== identity.walDir) {
    const { walDir: _, ...rest } = identity;
    await writeIdentity(join(o.dataDir, 'member'), { ...rest, urls, ...(walDir !== undefined ? { walDir } : {}) });
  }
  return options;
}
