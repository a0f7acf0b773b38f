/**
 * GET /status on a witness (issue 32, item 4): `etcetera status` showed a healthy witness as `unreachable`
 * (HTTP 404) and exited 1. The same JSON as a data member's (member-status.ts): healthy once it hears a
 * leader, a voter (not a learner) without data, so revision and database size are 0 and the wear view has no
 * rate; healthReason says it is a witness.
 */
import { hex } from '../base/hex.js';
import { dataFormatVersion, etcdVersion } from '../base/version.js';
import { buildVersion } from '../config/build-info.js';
import { bytesPerTb } from '../metrics/wear.js';
import type { Status } from '../raft/types.js';
import type { HealthResult } from '../metrics/metrics-http.js';
import type { MemberStatusJson } from './member-status.js';

export interface WitnessStatusSource {
  name: string;
  status(): Status;
  health(): HealthResult;
  wal: { profile: string; metrics: { syncs: number; bytesWritten: number; preallocatedBytes: number } };
  enduranceTbw: number;
  lifeWarningYears: number;
}

export async function witnessStatus(w: WitnessStatusSource): Promise<MemberStatusJson> {
  const s = w.status();
  const h = w.health();
  const m = w.wal.metrics;
  return {
    member: hex(s.id),
    name: w.name,
    version: etcdVersion,
    build: buildVersion(),
    dataFormat: dataFormatVersion,
    // A witness applies no entries, so it holds no cluster version of its own (the data members decide it).
    clusterVersion: null,
    health: h.health,
    healthReason: h.reason,
    leader: hex(s.leader),
    isLeader: s.role === 'leader',
    isLearner: false,
    term: s.term,
    raftIndex: s.commit,
    revision: 0,
    dbSizeBytes: 0,
    storageProfile: w.wal.profile,
    walFsync: { p50Seconds: null, p99Seconds: null, syncs: m.syncs, windowSeconds: null },
    disk: {
      writtenBytes: { wal: m.bytesWritten + m.preallocatedBytes, backend: 0, process: null },
      bytesPerDay: null,
      rateWindowSeconds: null,
      enduranceBytes: w.enduranceTbw * bytesPerTb,
      projectedLifeYears: null,
      lifeWarningYears: w.lifeWarningYears,
      lifeWarning: false,
    },
  };
}
