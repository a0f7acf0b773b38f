/**
 * GET /status on the client port and the metrics port (issue 26, item 4): what `etcetera status` shows, in
 * one JSON object, so an operator needs no Prometheus to see a member's health and its disk's wear:
 *
 *   {"member":"8e9e05c52164694d","name":"a","version":"3.5.17","build":"0.2.0+fdef2e7","dataFormat":2,
 *    "clusterVersion":"0.2","health":true,"healthReason":"",
 *    "leader":"8e9e05c52164694d","isLeader":true,"isLearner":false,"term":2,"raftIndex":12,"revision":7,
 *    "dbSizeBytes":20480,"storageProfile":"sd",
 *    "walFsync":{"p50Seconds":0.0041,"p99Seconds":0.0118,"syncs":312,"windowSeconds":60},
 *    "disk":{"writtenBytes":{"wal":1048576,"backend":81920,"process":1630208},"bytesPerDay":2.9e9,
 *            "rateWindowSeconds":3600,"enduranceBytes":4e12,"projectedLifeYears":3.78,
 *            "lifeWarningYears":3,"lifeWarning":false}}
 *
 * Unknown figures are null (no fsync in the last minute; no rate in the first instant; no write at all:
 * bytesPerDay 0 and projectedLifeYears null). Health is /health's check (a linearizable read).
 */
import { hex } from '../base/hex.js';
import { dataFormatVersion } from '../base/version.js';
import { buildVersion } from '../config/build-info.js';
import type { EtcdServer } from '../node/etcd-server.js';
import { etcdVersion } from '../node/maintenance/maintenance-ops.js';
import type { WearWatch } from './wear-watch.js';
import type { OffsiteStatus } from '../backup/offsite-uploads.js';
import { health } from './client-http.js';

export interface MemberStatusJson {
  member: string;
  name: string;
  /** The etcd API version (as Maintenance.Status and /version report it, for etcd's clients). */
  version: string;
  /** This member's etcetera build and the data format it writes (base/version.ts); absent before 0.2. */
  build: string;
  dataFormat: number;
  /** The cluster version this member applied; null until a leader decided one. */
  clusterVersion: string | null;
  health: boolean;
  healthReason: string;
  leader: string;
  isLeader: boolean;
  isLearner: boolean;
  term: number;
  raftIndex: number;
  revision: number;
  dbSizeBytes: number;
  storageProfile: string;
  walFsync: { p50Seconds: number | null; p99Seconds: number | null; syncs: number; windowSeconds: number | null };
  disk: {
    writtenBytes: { wal: number; backend: number; process: number | null };
    bytesPerDay: number | null;
    rateWindowSeconds: number | null;
    enduranceBytes: number;
    projectedLifeYears: number | null;
    lifeWarningYears: number;
    lifeWarning: boolean;
  };
  /** --etcd-s3: the uploads of snapshots to the bucket (absent when off). */
  offsite?: OffsiteStatus;
}

export async function memberStatus(server: EtcdServer, o: { name: string; storageProfile: string; wear: WearWatch; offsite?: { status(): OffsiteStatus } }): Promise<MemberStatusJson> {
  const h = await health(server);
  const fsync = o.wear.fsync();
  const wear = o.wear.view();
  const years = wear.projectedLifeYears;
  return {
    member: hex(server.memberId),
    name: o.name,
    version: etcdVersion,
    build: buildVersion(),
    dataFormat: dataFormatVersion,
    clusterVersion: server.state.membership.clusterVersion ?? null,
    health: h.health,
    healthReason: h.reason,
    leader: hex(server.leaderId),
    isLeader: server.isLeader,
    isLearner: server.isLearner(),
    term: server.term,
    raftIndex: server.driver.status().commit,
    revision: server.state.store.revision,
    dbSizeBytes: server.state.store.dbSizeBytes(),
    storageProfile: o.storageProfile,
    walFsync: {
      p50Seconds: fsync.p50Seconds ?? null,
      p99Seconds: fsync.p99Seconds ?? null,
      syncs: fsync.syncs,
      windowSeconds: fsync.spanMs === undefined ? null : Math.round(fsync.spanMs / 1000),
    },
    disk: {
      writtenBytes: { wal: wear.total.wal, backend: wear.total.backend, process: wear.total.process ?? null },
      bytesPerDay: wear.rate === undefined ? null : Math.round(wear.rate.perDay),
      rateWindowSeconds: wear.rate === undefined ? null : Math.round(wear.rate.spanMs / 1000),
      enduranceBytes: o.wear.meter.enduranceBytes,
      projectedLifeYears: years === undefined || !Number.isFinite(years) ? null : years,
      lifeWarningYears: o.wear.meter.warningYears,
      lifeWarning: wear.warning,
    },
    ...(o.offsite !== undefined ? { offsite: o.offsite.status() } : {}),
  };
}
