/**
 * Opening a data member's storage, the part every disk shares: the replicated state over the backend and the
 * log, loaded side by side; then a backend that crashed behind a received snapshot caught up from it. The
 * CLI's member calls it through its data directory (storage.ts: LevelDB, the index checkpoint, the log on
 * disk), the production-node simulator through its simulated disk (test/sim/node/server-node.ts), so the
 * seeds run the same opening. What only a data directory has (its lock and full-disk messages, a misplaced
 * log, the index checkpoint's removal, --force-new-cluster) stays in storage.ts, between the two steps.
 */
import { assert } from '../base/assert.js';
import type { Backend } from '../mvcc/backend.js';
import { KvStore } from '../mvcc/kv-store.js';
import type { Logger } from '../config/log.js';
import type { EtcdServerParts } from '../node/etcd-server-parts.js';
import { ServerState, type StateOptions } from '../node/apply/server-state.js';
import type { Wal, WalState } from '../wal/wal.js';

/** The disk a data member's storage opens on. */
export interface StorageDisk {
  backend: Backend;
  stateOptions: StateOptions;
  logger: Logger;
  /** Before anything is loaded: what the backend's committed consistent index rules out (a misplaced log). */
  beforeLoad?(consistentIndex: number): Promise<void>;
  /** The key index, from a checkpoint where the disk keeps one. */
  indexCheckpoint?(): Promise<AsyncIterable<Uint8Array> | undefined>;
  /** The log, opened knowing the backend's consistent index: a damaged record the backend applied is refused. */
  openWal(appliedIndex: number): Promise<{ wal: Wal; state: WalState }>;
  /** Received snapshot data (a crash before its restore finished), removed once the backend holds it. */
  snapshotData: Pick<EtcdServerParts['snapshotData'], 'source'> & { removeAll(): Promise<void> };
  /** The refusal when the backend is behind the log's snapshot and the snapshot's data is gone. */
  behindSnapshot(consistentIndex: number, snapshotIndex: number): Error;
}

/**
 * The backend's state and the log. The key index (a scan of every revision after a crash) and the log (read
 * and checked record by record) load side by side: each waits on its own reads, and a restart after kill -9
 * waited for both in turn. On failure the log is closed again; the backend is the caller's.
 */
export async function loadStateAndLog(disk: StorageDisk): Promise<{ state: ServerState; wal: Wal; walState: WalState }> {
  const consistentIndex = await KvStore.persistedIndex(disk.backend);
  await disk.beforeLoad?.(consistentIndex);
  const [loaded, walOpened] = await Promise.allSettled([
    (async () => {
      const s = await ServerState.load(disk.backend, disk.stateOptions, await disk.indexCheckpoint?.());
      disk.logger.info('loaded the key index', { keys: s.store.keyCount, ...s.store.loadedFrom });
      return s;
    })(),
    disk.openWal(consistentIndex),
  ]);
  if (loaded.status === 'rejected' || walOpened.status === 'rejected') {
    if (walOpened.status === 'fulfilled') await walOpened.value.wal.close().catch(() => undefined);
    throw loaded.status === 'rejected' ? loaded.reason : (walOpened as PromiseRejectedResult).reason;
  }
  assert(loaded.value.store.consistentIndex === consistentIndex, 'the backend moved while the member loaded it');
  return { state: loaded.value, wal: walOpened.value.wal, walState: walOpened.value.state };
}

/**
 * The state apply resumes from, and where: the backend caught up from a received snapshot it is behind, and
 * the received data removed (what the backend holds, or a snapshot Raft never took). The snapshot's data is
 * read only when the backend is behind it; otherwise the metadata is enough, and a large key space is not
 * read at every start.
 */
export async function catchUpFromSnapshot(disk: StorageDisk, s: { state: ServerState; walState: WalState }): Promise<{ state: ServerState; applied: number }> {
  let state = s.state;
  const meta = s.walState.snapshot;
  if (meta.index > state.store.consistentIndex) {
    // Only a snapshot received from the leader can be ahead of the backend (a crash before its restore
    // finished): its data is in the snap directory, or (written by an older version) in the snapshot file.
    const received = await disk.snapshotData.source(meta);
    const legacy = received === undefined ? await s.walState.loadSnapshot() : undefined;
    const source = received ?? (legacy !== undefined && legacy.data.length > 0 ? legacy.data : undefined);
    // Refused before anything was opened on a CLI restart (start-checks.ts); met there only if the files changed between.
    if (source === undefined) throw disk.behindSnapshot(state.store.consistentIndex, meta.index);
    disk.logger.info('backend behind the latest snapshot; restoring it', { snapshotIndex: meta.index, consistentIndex: state.store.consistentIndex });
    state = await ServerState.restore(disk.backend, source, disk.stateOptions);
    await state.store.flushDurable();
  }
  await disk.snapshotData.removeAll();
  return { state, applied: Math.max(state.store.consistentIndex, meta.index) };
}
