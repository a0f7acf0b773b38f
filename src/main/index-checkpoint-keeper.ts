/**
 * Keeps `member/index.ckpt` (storage/index-checkpoint-file.ts) current while the member runs, so a start after
 * kill -9 loads the key index and scans only the backend's tail after the checkpoint's cut, instead of every
 * revision (issue 34). Every indexCheckpointCheckIntervalMs it estimates what a start would scan now (the
 * whole backend while there is no checkpoint, else the bytes flushed since the cut) and writes a fresh one
 * when that is worth it (decide() below); at rest the estimate does not grow, so nothing is written.
 *
 * Off the hot path: the checkpoint is pulled one frame (≤ 4,096 keys) per turn of the event loop and written
 * under a temp name, then fsynced and renamed (wal/atomic-file.ts). Never used wrongly: a start refuses it
 * while the backend is behind its cut or a compaction passed it (mvcc/index-checkpoint-load.ts); a snapshot
 * from the leader that replaces the backend first calls invalidate(), which stops a write in progress and
 * removes the file. A cache: a failed write is logged and the start scans. On a full disk (ENOSPC, EDQUOT) the
 * write is skipped and its partial temp file removed, and none is begun while the disk is short (NOSPACE
 * raised: the reserve is for recovery); but EIO is the disk failing, and the member stops (onFatal), as the
 * log's fail-stop does: a write the disk lost here may be one it loses elsewhere (issue 32).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { indexCheckpointCheckIntervalMs, indexCheckpointSavingFactor, indexCheckpointScanBytesMin } from '../base/limits.js';
import type { Logger } from '../config/log.js';
import { IndexCheckpointError } from '../mvcc/index-checkpoint.js';
import type { KvStore } from '../mvcc/kv-store.js';
import { indexCheckpointPath, removeIndexCheckpoint } from '../storage/index-checkpoint-file.js';
import { createAtomicFile, type AtomicFile } from '../wal/atomic-file.js';
import { NodeFsPort, type FsPort } from '../wal/fs-port.js';

/** Errors of a full disk: the checkpoint is skipped (a cache), never fatal. */
const fullDiskCodes: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT']);
/** Errors of a failing disk: the member stops. */
const failedDiskCodes: ReadonlySet<string> = new Set(['EIO']);

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export interface KeeperView {
  /** What a start would scan now without a checkpoint made now. */
  scanBytes: number;
  /** The size of the last checkpoint written (0: none). */
  lastCheckpointBytes: number;
}

/** Whether to write a checkpoint now: the scan it saves is large, and large against its own cost. */
export function decide(v: KeeperView): boolean {
  return v.scanBytes >= indexCheckpointScanBytesMin && v.scanBytes >= indexCheckpointSavingFactor * v.lastCheckpointBytes;
}

export interface KeeperOptions {
  memberDir: string;
  log: Logger;
  /** Default indexCheckpointCheckIntervalMs. */
  intervalMs?: number;
  /** The member's stop sequence: a write that met EIO (the disk failing). Absent: logged only. */
  onFatal?(error: unknown): void;
  /** Default: the real file system (tests give a simulated one that fails on demand). */
  fs?: FsPort;
}

export class IndexCheckpointKeeper {
  readonly #o: KeeperOptions;
  readonly #fs: FsPort;
  #store: (() => KvStore) | undefined;
  #diskShort: (() => boolean) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;
  /** Raised by invalidate() and stop(): a write begun under an older epoch is dropped, never renamed. */
  #epoch = 0;
  /** The store the estimate is about, what a start scanned of it, and its writtenBytes at the last cut. */
  #about: KvStore | undefined;
  #baseBytes = 0;
  #writtenAtCut = 0;
  #lastBytes = 0;
  #compactAtCut = -1;
  #writes = 0;

  /** Checkpoints skipped for a full disk (tests, the log). */
  skippedFull = 0;

  constructor(o: KeeperOptions) {
    this.#o = o;
    this.#fs = o.fs ?? new NodeFsPort();
  }

  /** Checkpoints written so far (tests, the log). */
  get writes(): number {
    return this.#writes;
  }

  /** `diskShort`: whether the disk is short (this member's NOSPACE is up); no checkpoint is begun meanwhile. */
  start(store: () => KvStore, diskShort?: () => boolean): void {
    this.#store = store;
    this.#diskShort = diskShort;
    this.#timer = setInterval(() => void this.check(), this.#o.intervalMs ?? indexCheckpointCheckIntervalMs);
    this.#timer.unref();
  }

  /** What a start would scan now, and the last checkpoint's size. */
  view(): KeeperView {
    const store = this.#store!();
    if (store !== this.#about || store.compactRevision !== this.#compactAtCut) {
      // A new store (the start, or a snapshot restored from the leader): no checkpoint of it exists yet. Or
      // a compaction since the cut: a start refuses that checkpoint (a compaction can delete a key's tail
      // delete together with the put the checkpoint names), so it saves nothing any more.
      this.#about = store;
      this.#compactAtCut = store.compactRevision;
      this.#baseBytes = store.dbSizeBytes();
      this.#writtenAtCut = store.writtenBytes;
      this.#lastBytes = 0;
    }
    return { scanBytes: this.#baseBytes + store.writtenBytes - this.#writtenAtCut, lastCheckpointBytes: this.#lastBytes };
  }

  /** One look: writes a checkpoint when decide() says so and none is being written. */
  check(): Promise<void> | undefined {
    if (this.#store === undefined || this.#writing !== undefined) return undefined;
    if (this.#diskShort?.() === true || !decide(this.view())) return undefined;
    const writing = this.#write().finally(() => {
      this.#writing = undefined;
    });
    this.#writing = writing;
    return writing;
  }

  async #write(): Promise<void> {
    const epoch = this.#epoch;
    const store = this.#store!();
    const writtenAtCut = store.writtenBytes;
    const compactAtCut = store.compactRevision;
    const t0 = performance.now();
    const path = indexCheckpointPath(this.#o.memberDir);
    let bytes = 0;
    let file: AtomicFile | undefined;
    try {
      file = await createAtomicFile(this.#fs, path, { tmpPath: `${path}.live.tmp` });
      for (const frame of store.liveIndexCheckpoint()) {
        await file.write(frame);
        bytes += frame.length;
        await nextTurn();
        if (epoch !== this.#epoch) break;
      }
      if (epoch !== this.#epoch) {
        await file.abort();
        return;
      }
      await file.commit();
    } catch (error) {
      await file?.abort();
      const code = codeOf(error);
      if (code !== undefined && failedDiskCodes.has(code)) {
        this.#o.log.error('writing the key index checkpoint failed with an I/O error; the disk is failing, stopping', { error: String(error) });
        this.#o.onFatal?.(error);
      } else if (code !== undefined && fullDiskCodes.has(code)) {
        this.skippedFull++;
        this.#o.log.warn('no room for a key index checkpoint; skipped (a start after a crash scans more)', { error: String(error) });
      } else if (error instanceof IndexCheckpointError) {
        this.#o.log.info('key index checkpoint dropped; the next check starts a new one', { reason: error.message });
      } else {
        this.#o.log.warn('could not write a key index checkpoint; a start after a crash scans more', { error: String(error) });
      }
      return;
    }
    // The rename landed after an invalidate() began: that call removes the file after this write settles.
    if (store === this.#about && compactAtCut === this.#compactAtCut) {
      this.#baseBytes = 0;
      this.#writtenAtCut = writtenAtCut;
      this.#lastBytes = bytes;
    }
    this.#writes++;
    this.#o.log.info('wrote a key index checkpoint', { bytes, keys: store.keyCount, ms: Math.round(performance.now() - t0) });
  }

  /** Before the backend is replaced: no checkpoint of the old one may survive, or be written after this. */
  async invalidate(): Promise<void> {
    this.#epoch++;
    await this.#writing;
    await removeIndexCheckpoint(this.#o.memberDir);
    this.#about = undefined;
  }

  /** Stops checking; a write in progress is dropped (the stop saves an exact checkpoint after it). */
  async stop(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#store = undefined;
    this.#epoch++;
    await this.#writing;
  }
}
