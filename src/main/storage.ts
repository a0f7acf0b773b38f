/**
 * Opening a member's storage at start: the backend (and its lock), the replicated state over it, the WAL,
 * a --force-new-cluster reset, and a backend that crashed behind a received snapshot caught up from it.
 */
import { join } from 'node:path';
import { assert } from '../base/assert.js';
import { KvStore } from '../mvcc/kv-store.js';
import { LevelBackend } from '../storage/level-backend.js';
import type { Snapshot } from '../raft/types.js';
import { Wal } from '../wal/wal.js';
import type { Member } from '../node/server-api.js';
import type { Identity } from '../storage/identity.js';
import { resetToSingleMember } from '../backup/cluster-reset.js';
import { directoryBytes } from './dir-bytes.js';
import { openIndexCheckpoint, removeIndexCheckpoint } from '../storage/index-checkpoint-file.js';
import { noFsyncPort } from './member-etcd-options.js';
import type { MemberOptions } from '../config/member-options.js';
import { ServerState, type StateOptions } from '../node/apply/server-state.js';
import { SnapshotDataDir } from '../storage/snapshot-data.js';
import { refuseMisplacedLog, walDirOf } from '../storage/wal-dir.js';
import { fullDiskError, spaceAdvice } from './disk-watch.js';
import { NodeFsPort } from '../wal/fs-port.js';
import { backendBehindSnapshotError } from './ways-out.js';

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
  let state: ServerState;
  let opened: Awaited<ReturnType<typeof Wal.open>>;
  try {
    const consistentIndex = await KvStore.persistedIndex(backend);
    if (!fresh) await refuseMisplacedLog(o.dataDir, o.walDir, consistentIndex);
    // The key index (a scan of every revision after a crash) and the log (read and checked record by record)
    // load side by side: each waits on its own reads, and a restart after kill -9 waited for both in turn.
    const [loaded, walOpened] = await Promise.allSettled([
      (async () => {
        const s = await ServerState.load(backend, stateOptions, await openIndexCheckpoint(memberDir));
        log.info('loaded the key index', { keys: s.store.keyCount, ...s.store.loadedFrom });
        return s;
      })(),
      Wal.open(walDirOf(o.dataDir, o.walDir), {
        profile: o.storageProfile,
        ...(o.unsafeNoFsync === true ? { fs: noFsyncPort() } : {}),
        logger: (line) => log.info(line),
        onFatal,
        appliedIndex: consistentIndex,
      }),
    ]);
    if (loaded.status === 'rejected' || walOpened.status === 'rejected') {
      if (walOpened.status === 'fulfilled') await walOpened.value.wal.close().catch(() => undefined);
      throw loaded.status === 'rejected' ? loaded.reason : (walOpened as PromiseRejectedResult).reason;
    }
    state = loaded.value;
    // Only once the log opened too: a start the log refuses keeps the checkpoint (issue 32, item 2).
    await removeIndexCheckpoint(memberDir);
    assert(state.store.consistentIndex === consistentIndex, 'the backend moved while the member loaded it');
    opened = walOpened.value;
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
  const closers: Array<() => Promise<unknown>> = [() => wal.close(), () => backend.close()];
  try {
    const snapshotData = new SnapshotDataDir(join(memberDir, 'snap'));
    await snapshotData.init();
    state = await catchUpFromSnapshot(o, identity.memberId, { backend, state, stateOptions, walState, snapshotData });
    await snapshotData.removeAll(); // what the backend holds, or a snapshot Raft never took
    const snapshot: Snapshot | undefined = walState.snapshot.index > 0 ? { meta: walState.snapshot, data: new Uint8Array(0) } : undefined;
    const applied = Math.max(state.store.consistentIndex, walState.snapshot.index);
    return { backend, state, stateOptions, wal, walState, snapshotData, snapshot, applied };
  } catch (error) {
    for (const closeOne of [...closers].reverse()) await closeOne().catch(() => undefined);
    throw error;
  }
}

/**
 * The snapshot's data is read only when the backend is behind it (a crash before the backend caught up);
 * otherwise the metadata is enough, and a large key space is not read at every start.
 */
async function catchUpFromSnapshot(
  o: MemberOptions,
  memberId: bigint,
  s: Pick<MemberStorage, 'backend' | 'state' | 'stateOptions' | 'walState' | 'snapshotData'>,
): Promise<ServerState> {
  if (s.walState.snapshot.index <= s.state.store.consistentIndex) return s.state;
  // Only a snapshot received from the leader can be ahead of the backend (a crash before its restore
  // finished): its data is in the snap directory, or (written by an older version) in the snapshot file.
  const meta = s.walState.snapshot;
  const received = await s.snapshotData.source(meta);
  const legacy = received === undefined ? await s.walState.loadSnapshot() : undefined;
  const source = received ?? (legacy !== undefined && legacy.data.length > 0 ? legacy.data : undefined);
  if (source === undefined) {
    // Refused before anything was opened on a restart (start-checks.ts); met here only if the files changed between.
    throw backendBehindSnapshotError(join(o.dataDir, 'member'), memberId, s.state.store.consistentIndex, meta.index);
  }
  o.logger.info('backend behind the latest snapshot; restoring it', { snapshotIndex: meta.index, consistentIndex: s.state.store.consistentIndex });
  const state = await ServerState.restore(s.backend, source, s.stateOptions);
  await state.store.flushDurable();
  return state;
}
