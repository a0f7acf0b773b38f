/**
 * Opening a member's storage at start from its data directory: the backend (and its lock), the replicated
 * state over it and the WAL, a --force-new-cluster reset, and a backend that crashed behind a received
 * snapshot caught up from it. The loading and the catch-up are storage-open.ts's, which the production-node
 * simulator runs too; what is here is what only a data directory has.
 */
import { join } from 'node:path';
import { LevelBackend } from '../storage/level-backend.js';
import type { Snapshot } from '../raft/types.js';
import { Wal } from '../wal/wal.js';
import type { Member } from '../node/server-api.js';
import type { Identity } from '../storage/identity.js';
import { directoryBytes } from './dir-bytes.js';
import { openIndexCheckpoint, removeIndexCheckpoint } from '../storage/index-checkpoint-file.js';
import { noFsyncPort } from './member-etcd-options.js';
import type { MemberOptions } from '../config/member-options.js';
import type { ServerState, StateOptions } from '../node/apply/server-state.js';
import { SnapshotDataDir } from '../storage/snapshot-data.js';
import { refuseMisplacedLog, walDirOf } from '../storage/wal-dir.js';
import { fullDiskError, spaceAdvice } from './disk-watch.js';
import { NodeFsPort } from '../wal/fs-port.js';
import { backendBehindSnapshotError } from './ways-out.js';
import { catchUpFromSnapshot, loadStateAndLog, type StorageDisk } from './storage-open.js';

export interface MemberStorage {
  backend: LevelBackend;
  state: ServerState;
  stateOptions: StateOptions;
  wal: Wal;
  walState: Awaited<ReturnType<typeof Wal.open>>['state'];
  snapshotData: SnapshotDataDir;
  /** The log's latest snapshot as a marker (no data), for the Raft core. */
  snapshot: Snapshot | undefined;
  /** Where apply resumes: the backend's consistent index, or the snapshot's when that is ahead. */
  applied: number;
}

export async function openMemberStorage(o: MemberOptions, identity: Identity, fresh: boolean, onFatal: (error: unknown) => void): Promise<MemberStorage> {
  const log = o.logger;
  const memberDir = join(o.dataDir, 'member');
  // The backend first: its consistent index is committed, and the log must still reach it (a damaged last
  // record is then not a torn write, and the log is left untouched).
  const dbDir = join(memberDir, 'db');
  const backend = await LevelBackend.open(dbDir, { diskBytes: () => directoryBytes(dbDir) }).catch(async (error: unknown) => {
    const inUse = new Error(`${memberDir} is in use by another process; is another etcetera running on it?`);
    if ((error as { code?: unknown }).code === 'LEVEL_LOCKED') throw inUse;
    // Before the looser lock test: on a full disk the failing file may well be LOCK.
    const fs = new NodeFsPort();
    const full = await fullDiskError(dbDir, error, (dir) => fs.freeBytes(dir), spaceAdvice(o.dataDir, walDirOf(o.dataDir, o.walDir)));
    if (full !== undefined) throw full;
    if (/lock/i.test(String((error as { cause?: unknown }).cause))) throw inUse;
    throw error;
  });
  const stateOptions: StateOptions = {
    quotaBackendBytes: o.quotaBackendBytes,
    minLeaseTtlSeconds: Math.ceil((3 * o.electionTimeoutMs) / 2 / 1000),
  };
  const snapshotData = new SnapshotDataDir(join(memberDir, 'snap'));
  const disk: StorageDisk = {
    backend,
    stateOptions,
    logger: log,
    beforeLoad: async (consistentIndex) => {
      if (!fresh) await refuseMisplacedLog(o.dataDir, o.walDir, consistentIndex);
    },
    indexCheckpoint: () => openIndexCheckpoint(memberDir),
    openWal: (appliedIndex) => Wal.open(walDirOf(o.dataDir, o.walDir), {
      profile: o.storageProfile,
      ...(o.unsafeNoFsync === true ? { fs: noFsyncPort() } : {}),
      logger: (line) => log.info(line),
      onFatal,
      appliedIndex,
    }),
    snapshotData,
    behindSnapshot: (consistentIndex, snapshotIndex) => backendBehindSnapshotError(memberDir, identity.memberId, consistentIndex, snapshotIndex),
  };
  let opened: Awaited<ReturnType<typeof loadStateAndLog>>;
  try {
    opened = await loadStateAndLog(disk);
    // Only once the log opened too: a start the log refuses keeps the checkpoint (issue 32, item 2).
    await removeIndexCheckpoint(memberDir);
  } catch (error) {
    await backend.close();
    throw error;
  }
  const { wal, walState } = opened;
  if (!fresh && o.forceNewCluster === true) {
    const self: Member = { id: identity.memberId, name: o.name, peerUrls: o.initialAdvertisePeerUrls, clientUrls: o.advertiseClientUrls, isLearner: false };
    // Loaded only for --force-new-cluster (issue 34: a member at rest never runs it).
    const { resetToSingleMember } = await import('../backup/cluster-reset.js');
    Object.assign(walState, await resetToSingleMember(wal, walState, self, log));
  }
  if (fresh && o.forceNewCluster === true) log.warn('--force-new-cluster on a new data directory: nothing to reset');
  log.info('storage profile chosen', { profile: wal.profile, syncLatencyMs: wal.metrics.measuredSyncLatencyMs });
  const closers: Array<() => Promise<unknown>> = [() => wal.close(), () => backend.close()];
  try {
    await snapshotData.init();
    const { state, applied } = await catchUpFromSnapshot(disk, opened);
    const snapshot: Snapshot | undefined = walState.snapshot.index > 0 ? { meta: walState.snapshot, data: new Uint8Array(0) } : undefined;
    return { backend, state, stateOptions, wal, walState, snapshotData, snapshot, applied };
  } catch (error) {
    for (const closeOne of [...closers].reverse()) await closeOne().catch(() => undefined);
    throw error;
  }
}
