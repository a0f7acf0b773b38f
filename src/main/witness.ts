/**
 * `etcetera witness`: a witness member (src/raft/witness.ts, issue 24). It joins a running cluster with
 * `--server URL --token T` as a voter that holds no data: it persists the Raft log's tail and its hard state,
 * acknowledges appends and votes, and so lets two data members keep a quorum when either dies. It builds no
 * store, applies only membership changes (to know its peers), serves no keys: its client URLs answer
 * /health (healthy once it hears a leader; the reason says it is a witness), /status (witness-status.ts), /metrics
 * (`etcetera_server_is_witness 1`), and over gRPC what `etcdctl endpoint health` and `endpoint status` ask
 * (witness-grpc.ts); its metrics URLs the HTTP routes only.
 *
 * The driver, what it applies and where its peers are come from witness-factory.ts (shared with the
 * production-node simulator); this file adds what only a process has: WAL, transport, HTTP, gRPC, metrics.
 *
 * Data directory: `<data-dir>/member/identity` and `<data-dir>/member/wal/` (or --wal-dir), as a member's,
 * with no `db/` and no `snap/`. The log starts after what every data voter holds durably (the data leader
 * says so on every heartbeat), so it stays a small tail.
 */
import { randomBytes } from 'node:crypto';
import { hex } from '../base/hex.js';
import { raftInflightMsgsMax, raftMsgBytesMax, raftUncommittedBytesMax, walFirstSegmentBytes } from '../base/limits.js';
import { Prng } from '../base/prng.js';
import { RawNode } from '../raft/raw-node.js';
import type { Status } from '../raft/types.js';
import type { WalTuning } from '../wal/profiles.js';
import { Wal } from '../wal/wal.js';
import type { MemberOptions } from '../config/member-options.js';
import { Registry, registerProcessMetrics } from '../metrics/metrics.js';
import { createJsonHandler, createMetricsHandler, startMetricsHttp, type HealthResult } from '../metrics/metrics-http.js';
import { startWitnessClientPort } from './witness-client-port.js';
import { witnessStatus } from './witness-status.js';
import { electionTicksOf } from '../node/apply/catch-up.js';
import type { RaftDriver } from '../node/driver/raft-driver.js';
import { realScheduler } from '../node/driver/real-scheduler.js';
import type { Identity } from '../storage/identity.js';
import { walDirOf } from '../storage/wal-dir.js';
import { PeerTransport } from '../peer/transport.js';
import { adoptToken, leaveAfterFailedJoin, openOrBootstrap } from './bootstrap.js';
import { PeerSync, peerRequestOf, transportBase, withPort } from './peers.js';
import { MemberStop } from './member-stop.js';
import { checkWitnessRestart } from './witness-start-checks.js';
import { buildWitnessMember } from './witness-factory.js';

/**
 * A witness's log is a tail of a few entries, so its segments are small whatever the device: the storage
 * profile's segments (16 MiB on an SD card, 64 MiB on an SSD) are preallocated whole, and made its disk
 * 17 MiB holding no entry at all (bench:compare's witness scenario, 20 ms fsyncs). With 1 MiB segments, one
 * spare and batches that fit one: at most the active segment, the next one prepared and a spare, ~3 MiB, plus
 * whatever tail a lagging data member still needs.
 */
export const witnessWalTuning: Partial<WalTuning> = { segmentBytes: walFirstSegmentBytes, batchBytesMax: walFirstSegmentBytes, recycleSegmentsMax: 1 };


export interface RunningWitness {
  readonly memberId: bigint;
  readonly clusterId: bigint;
  /** The URLs serving /health and /metrics (ports resolved): the client URLs (gRPC too), then the metrics URLs. */
  readonly clientUrls: string[];
  readonly peerUrl: string;
  readonly wal: Wal;
  /** Resolves when the witness stops by itself (removed from the cluster, or a fatal error). */
  readonly stopped: Promise<{ reason: string }>;
  status(): Status;
  close(): Promise<void>;
}

export async function startWitness(options: MemberOptions): Promise<RunningWitness> {
  const o: MemberOptions = { ...options, witness: true };
  const boot = await openOrBootstrap(o);
  // A restart is checked read-only first, as a data member's: a refused start changes no file (start-checks.ts).
  if (!boot.created) await checkWitnessRestart(o, boot.identity);
  // A witness of a cluster with the public token takes the secret --token too (bootstrap.ts: adoptToken).
  if (boot.adoptToken === true) await adoptToken(o, boot.identity, boot.token);
  o.logger.info(boot.created ? 'joined as a witness' : 'restarting witness from its data directory', {
    member: hex(boot.identity.memberId),
    cluster: hex(boot.identity.clusterId),
  });
  try {
    return await runWitness(o, boot.identity, boot.token);
  } catch (error) {
    if (boot.created && o.bootstrap.kind === 'join') await leaveAfterFailedJoin(o, boot.identity, boot.token, o.bootstrap.serverUrl);
    throw error;
  }
}

/** The stop's stages, in the stop's order (see member-stop.ts): the old close's order. */
const witnessStopOrder = ['refresh', 'driver', 'client', 'http', 'transport', 'wal'] as const;

async function runWitness(o: MemberOptions, identity: Identity, token: string): Promise<RunningWitness> {
  const log = o.logger;
  const stop = new MemberStop(log, witnessStopOrder, 'witness stopped');
  const { wal, state: walState } = await Wal.open(walDirOf(o.dataDir, o.walDir), {
    profile: o.storageProfile,
    tuning: witnessWalTuning,
    logger: (line) => log.info(line),
    onFatal: (error) => stop.fatal(error),
  });
  stop.add('wal', () => wal.close());
  try {
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
        rng: new Prng(randomBytes(4).readUInt32BE(0)),
        logger: (line) => log.debug(line),
      },
      { hardState: walState.hardState, snapshot: walState.snapshot, entries: walState.entries, applied: walState.snapshot.index },
    );
    let peerPort = 0;
    const member = await buildWitnessMember({
      scheduler: realScheduler,
      wal,
      network: async (driver) => {
        const transport = new PeerTransport({
          ...transportBase(o, identity, token, driver),
          onPeerRefused: (_id, refusal) => {
            if (refusal.code !== 'removed') return;
            log.warn('a peer refused this witness: it was removed from the cluster; stopping', { reason: refusal.reason });
            stop.request('removed from the cluster');
          },
        });
        stop.add('transport', () => transport.close());
        ({ port: peerPort } = await transport.start({
          onMessages: (msgs) => driver.step(msgs),
          // A witness answers no request (joins, member changes, leases go to data members) and takes no state,
          // except a data member's word that it was removed (`etcdctl member remove`): its own removal's commit
          // may never reach it, since the leader stops replicating to it as it applies the change.
          onRequest: async (req) => {
            if (req.method === 'removed' && (req.payload as { id?: unknown } | undefined)?.id === identity.memberId) {
              log.warn('this witness was removed from the cluster; stopping', { member: hex(identity.memberId) });
              stop.request('removed from the cluster');
              return { ok: true, payload: {} };
            }
            return { ok: false, error: `a witness serves no ${req.method} request: ask a data member` };
          },
          // A data leader sends a witness snapshot metadata over an empty stream: it moves the start of the log.
          onSnapshot: (_from, snapshot, message) => {
            if (snapshot.data.byteLength > 0) throw new Error('a witness holds no state: it takes no snapshot data');
            driver.step([message]);
          },
        }));
        const sync = new PeerSync(transport, identity.memberId);
        return { send: (msgs) => transport.send(msgs), request: peerRequestOf(transport), syncPeers: (members) => sync.sync(members) };
      },
    }, {
      raft: node,
      memberId: identity.memberId,
      joinPeers: identity.joinPeers ?? [],
      heartbeatMs: o.heartbeatIntervalMs,
      logger: log,
      onRemoved: () => stop.request('removed from the cluster'),
      onFatal: (error) => stop.fatal(error),
    });
    const { driver } = member;
    const peerUrl = withPort(o.initialAdvertisePeerUrls[0] ?? o.listenPeerUrls[0]!, peerPort);

    const registry = new Registry();
    registerWitnessMetrics(registry, driver, identity.memberId);
    member.start();
    stop.add('driver', () => driver.stop());
    stop.add('refresh', () => member.stopRefresh());
    const statusRoute = createJsonHandler('/status', () => witnessStatus({
      name: o.name, status: () => driver.status(), health: () => witnessHealth(driver), wal,
      enduranceTbw: o.storageEnduranceTbw, lifeWarningYears: o.storageLifeWarningYears,
    }));
    const health = async (): Promise<HealthResult> => witnessHealth(driver);
    const metricsRoutes = createMetricsHandler({ registry, health });
    const client = await startWitnessClientPort({
      listenUrls: o.listenClientUrls,
      http: (req, res) => metricsRoutes(req, res) || statusRoute(req, res),
      grpc: { clusterId: identity.clusterId, status: () => driver.status() },
      logger: log,
    });
    stop.add('client', () => client.close());
    const http = await startMetricsHttp({ listenUrls: o.listenMetricsUrls, registry, health, routes: [statusRoute], logger: log });
    stop.add('http', () => http.close());
    stop.arm();
    const healthUrls = [...client.urls, ...http.urls];
    log.info('witness running: votes and keeps the log tail, holds no data, serves no keys', { peerUrl, healthUrls });
    return {
      memberId: identity.memberId,
      clusterId: identity.clusterId,
      clientUrls: healthUrls,
      peerUrl,
      wal,
      stopped: stop.stopped,
      status: () => driver.status(),
      close: () => stop.run(),
    };
  } catch (error) {
    await stop.run().catch(() => undefined);
    throw error;
  }
}

/** Healthy once a leader is known; the reason always says this member is a witness (etcd's /health has no field for it). */
export function witnessHealth(driver: Pick<RaftDriver, 'softState'>): HealthResult {
  return driver.softState.leader === 0n
    ? { health: false, reason: 'RAFT NO LEADER (witness: holds no data, serves no client)' }
    : { health: true, reason: 'witness: holds no data, serves no client' };
}

function registerWitnessMetrics(registry: Registry, driver: RaftDriver, memberId: bigint): void {
  registerProcessMetrics(registry);
  const isWitness = registry.gauge({ name: 'etcetera_server_is_witness', help: 'Whether this member is a witness (votes, holds no data). 1 if it is.' });
  const hasLeader = registry.gauge({ name: 'etcd_server_has_leader', help: 'Whether or not a leader exists. 1 is existence, 0 is not.' });
  const isLeader = registry.gauge({ name: 'etcd_server_is_leader', help: 'Whether or not this member is a leader. 1 if is, 0 otherwise.' });
  const id = registry.gauge({ name: 'etcd_server_id', help: 'Server or member ID in hexadecimal format. 1 for \'server_id\' label with current ID.', labelNames: ['server_id'] });
  const logEntries = registry.gauge({ name: 'etcetera_witness_log_entries', help: 'Raft log entries this witness holds (the tail some data voter may still need).' });
  isWitness.set(1);
  id.set(1, { server_id: hex(memberId) });
  registry.onCollect(() => {
    const s = driver.status();
    hasLeader.set(s.leader === 0n ? 0 : 1);
    isLeader.set(s.role === 'leader' ? 1 : 0);
    logEntries.set(s.lastIndex - s.firstIndex + 1);
  });
}
