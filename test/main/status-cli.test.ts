/** `etcetera status`'s table (src/main/status-cli.ts): etcdctl's box, one row per endpoint, units readable. */
import { describe, expect, it } from 'vitest';
import { statusTable, type StatusRow } from '../../src/main/status-cli.js';

const healthy: StatusRow = {
  endpoint: '127.0.0.1:2379', member: '8e9e05c52164694d', name: 'a', version: '3.5.17', build: '0.2.0+fdef2e7', dataFormat: 2, clusterVersion: '0.2', health: true, healthReason: '',
  leader: '8e9e05c52164694d', isLeader: true, isLearner: false, term: 2, raftIndex: 12, revision: 7, dbSizeBytes: 20480,
  storageProfile: 'sd', walFsync: { p50Seconds: 0.0041, p99Seconds: 0.0118, syncs: 312, windowSeconds: 60 },
  disk: {
    writtenBytes: { wal: 1, backend: 1, process: 1 }, bytesPerDay: 2.9e9, rateWindowSeconds: 3600, enduranceBytes: 4e12,
    projectedLifeYears: 3.778, lifeWarningYears: 5, lifeWarning: true,
  },
};

describe('statusTable', () => {
  it('prints build, health, leader, term, fsync, profile, rate with its window and life; an unreachable member; no writes; a member before 0.2; a young member', () => {
    // A member of a build before 0.2 reports no build (the cast: its JSON lacks the field).
    const idle = { ...healthy, build: undefined as unknown as string, endpoint: '127.0.0.1:22379', member: 'fd422379fda50e48', health: false, healthReason: 'RAFT NO LEADER', leader: '0', walFsync: { p50Seconds: null, p99Seconds: null, syncs: 0, windowSeconds: 60 }, disk: { ...healthy.disk, bytesPerDay: 0, projectedLifeYears: null, lifeWarning: false } };
    const young: StatusRow = { ...healthy, endpoint: '127.0.0.1:42379', disk: { ...healthy.disk, bytesPerDay: 8.8e9, rateWindowSeconds: 10, projectedLifeYears: null, lifeWarning: false } };
    const table = statusTable([healthy, idle, young, { endpoint: '127.0.0.1:32379', error: 'connect ECONNREFUSED' }]);
    expect(table).toBe([
      '+-----------------+------------------+---------------+------------------------+------------------+------+-----------+-----------+---------+----------------+---------------------------+',
      '|    ENDPOINT     |        ID        |     BUILD     |         HEALTH         |      LEADER      | TERM | FSYNC P50 | FSYNC P99 | PROFILE |  WRITTEN/DAY   |         DISK LIFE         |',
      '+-----------------+------------------+---------------+------------------------+------------------+------+-----------+-----------+---------+----------------+---------------------------+',
      '|  127.0.0.1:2379 | 8e9e05c52164694d | 0.2.0+fdef2e7 |                   true | 8e9e05c52164694d |    2 |   4.10 ms |   11.8 ms |      sd | 2.9 GB (1.0 h) |               3.8 years ! |',
      '| 127.0.0.1:22379 | fd422379fda50e48 |             - | false (RAFT NO LEADER) |             none |    2 |         - |         - |      sd |    0 B (1.0 h) |                 no writes |',
      '| 127.0.0.1:42379 | 8e9e05c52164694d | 0.2.0+fdef2e7 |                   true | 8e9e05c52164694d |    2 |   4.10 ms |   11.8 ms |      sd |  8.8 GB (10 s) | measuring (10 s of 1.0 h) |',
      '| 127.0.0.1:32379 |                - |             - |            unreachable |                - |    - |         - |         - |       - |              - |                         - |',
      '+-----------------+------------------+---------------+------------------------+------------------+------+-----------+-----------+---------+----------------+---------------------------+',
      '',
    ].join('\n'));
  });
});
