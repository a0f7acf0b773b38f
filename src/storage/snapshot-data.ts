/**
 * Snapshot data on disk, outside the Raft log. A member's own snapshots carry no data: the backend is made
 * durable up to the snapshot's index before the log releases anything (a marker, as etcd's backend is the
 * snapshot). A snapshot received from the leader is streamed into `<data-dir>/member/snap/<term>-<index>.snap.db`
 * (whole or not at all: wal/atomic-file.ts) before Raft sees it, restored from there into the backend,
 * and deleted once the backend holding it is durable. A crash in between restarts the restore from the file.
 * The stream's framing and checksum are verified as it is written, and a stream that fails them is never
 * renamed into place: a file under its final name is whole, so the restore reads it once (no check pass).
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { CheckedSnapshot } from '../mvcc/kv-store.js';
import { StateStreamDecoder } from '../mvcc/state-stream.js';
import type { Message, SnapshotMeta } from '../raft/types.js';
import type { SnapshotSink } from '../peer/types.js';
import { createAtomicFile } from '../wal/atomic-file.js';
import { NodeFsPort } from '../wal/fs-port.js';

const nodeFs = new NodeFsPort();

const hex16 = (n: number): string => n.toString(16).padStart(16, '0');
const suffix = '.snap.db';
/** Reads of a received file for the restore: large enough that per-chunk costs vanish, small beside the memory bound. */
const readChunkBytes = 1024 * 1024;

export function snapshotDataName(meta: Pick<SnapshotMeta, 'term' | 'index'>): string {
  return `${hex16(meta.term)}-${hex16(meta.index)}${suffix}`;
}

/**
 * etcd_snap_db_fsync_duration_seconds and etcd_snap_db_save_total_duration_seconds: etcd times the fsync of
 * each received `.snap.db`, and its whole save from the stream's start to the rename; so do we, per file.
 */
export interface SnapshotDataTimings {
  fsyncSeconds(seconds: number): void;
  saveSeconds(seconds: number): void;
}

/** Judges a received snapshot chunk by chunk (the member's disk room, node/request/disk-room.ts, above this layer). */
export interface SnapshotAdmission {
  /** Whether the next chunk of `bytes` may be written. */
  admit(bytes: number): boolean;
  /** The snapshot arrived whole. */
  received(): void;
}

/** A snapshot from the leader refused for room on the disk (NOSPACE): the follower stays behind, alive. */
export class SnapshotRefusedError extends Error {
  constructor(meta: Pick<SnapshotMeta, 'term' | 'index'>) {
    super(`NOSPACE: no room to restore snapshot ${meta.term}/${meta.index} (its file and LevelDB's restore need 3× its size above the disk's reserve); the leader will send it again`);
    this.name = 'SnapshotRefusedError';
  }
}

export class SnapshotDataDir implements SnapshotSink {
  readonly dir: string;
  /** Receives in progress get temp files of their own: a leader may send the same snapshot again while the first send is still arriving. */
  #receives = 0;

  constructor(dir: string) {
    this.dir = dir;
  }

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    // Temp files are incomplete receives from before a crash.
    for (const name of await readdir(this.dir)) if (name.endsWith('.tmp')) await rm(join(this.dir, name), { force: true });
  }

  #path(meta: Pick<SnapshotMeta, 'term' | 'index'>): string {
    return join(this.dir, snapshotDataName(meta));
  }

  /** Receive a snapshot untimed (restore tools, tests). */
  open(message: Message): ReturnType<SnapshotSink['open']> {
    return this.#receive(message, undefined);
  }

  /**
   * The sink the peer transport writes received snapshots into, timing each (etcd_snap_db_*). A sink of its
   * own, built once the member's metrics exist: the directory is opened (and restored from) before them.
   */
  receiver(timings: SnapshotDataTimings, admission?: () => SnapshotAdmission): SnapshotSink {
    return { open: (message) => this.#receive(message, timings, admission?.()) };
  }

  /**
   * `admission` (the disk's room, node/request/disk-room.ts) judges each chunk before it is written: a
   * snapshot whose restore would not fit above the disk's reserve is refused (the partial file deleted, the
   * leader's stream failed; it sends again later) rather than meeting ENOSPC in the log or the backend.
   */
  async #receive(message: Message, timings: SnapshotDataTimings | undefined, admission?: SnapshotAdmission): ReturnType<SnapshotSink['open']> {
    const startMs = performance.now();
    const meta = message.snapshot!.meta;
    const final = this.#path(meta);
    const file = await createAtomicFile(nodeFs, final, { tmpPath: `${final}.${++this.#receives}.tmp` });
    const checker = new StateStreamDecoder();
    return {
      write: async (chunk) => {
        if (admission !== undefined && !admission.admit(chunk.length)) throw new SnapshotRefusedError(meta);
        checker.check(chunk);
        await file.write(chunk);
      },
      commit: async () => {
        checker.end();
        const syncMs = performance.now();
        await file.sync();
        timings?.fsyncSeconds((performance.now() - syncMs) / 1000);
        await file.commit();
        admission?.received();
        timings?.saveSeconds((performance.now() - startMs) / 1000);
      },
      abort: () => file.abort(),
    };
  }

  /** The received data for this snapshot (checked when it was received); undefined when absent. */
  async source(meta: Pick<SnapshotMeta, 'term' | 'index'>): Promise<CheckedSnapshot | undefined> {
    const path = this.#path(meta);
    const exists = await open(path, 'r').then(async (f) => (await f.close(), true), () => false);
    if (!exists) return undefined;
    return { checked: () => createReadStream(path, { highWaterMark: readChunkBytes }) as AsyncIterable<Uint8Array> };
  }

  /** Delete every received snapshot file (at start, once the backend holds what it needs). */
  async removeAll(): Promise<void> {
    await this.removeThrough(Number.MAX_SAFE_INTEGER);
  }

  /**
   * Delete the received snapshot files up to `index` (once the backend holding that snapshot is durable). A
   * newer one may have arrived during the restore and wait behind it: it stays.
   */
  async removeThrough(index: number): Promise<void> {
    for (const name of await readdir(this.dir)) {
      if (!name.endsWith(suffix)) continue;
      const at = Number.parseInt(name.slice(17, 33), 16);
      if (Number.isSafeInteger(at) && at > index) continue;
      await rm(join(this.dir, name), { force: true });
    }
  }
}
