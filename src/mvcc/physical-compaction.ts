/**
 * The backend side of compaction: the revisions a compaction dropped from memory are deleted from the
 * backend in chunks after the flush that persists the schedule, then the finished mark is written; and the
 * reclaim that has LevelDB rewrite its tables once enough was dropped.
 */
import { compactionBatchKeysMax } from '../base/limits.js';
import type { Backend } from './backend.js';
import type { BackendQueue } from './backend-queue.js';
import { chunked, finishedCompactKey } from './compaction.js';
import { revisionToBytes } from './revision.js';
import { codeToBytes } from './rev-code.js';

export interface PhysicalJob {
  revision: number;
  /** Revision codes to delete from the 'key' bucket, ascending. */
  codes: number[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface PhysicalCompactionHost {
  backend: Backend;
  queue: BackendQueue;
  flush(): Promise<void>;
  /** Whether `dropped` revisions since the last reclaim make a reclaim worth it now. */
  reclaimWorthIt(dropped: number): boolean;
}

export class PhysicalCompaction {
  readonly #h: PhysicalCompactionHost;
  /** Compactions whose schedule is still in the buffer: their deletes start after the next flush. */
  #pendingJobs: PhysicalJob[] = [];
  readonly #runningJobs = new Set<Promise<void>>();
  /** Revisions compaction dropped since the backend last rewrote its tables (reclaim() has work only then). */
  #droppedSinceReclaim = 0;
  #reclaiming: Promise<void> | undefined;

  constructor(host: PhysicalCompactionHost) {
    this.#h = host;
  }

  /** Compactions scheduled in the buffer and not flushed yet. */
  get pending(): number {
    return this.#pendingJobs.length;
  }

  /** A compaction at `revision` dropped `codes` in memory; settles once they are gone from the backend. */
  schedule(revision: number, codes: number[]): Promise<void> {
    this.#droppedSinceReclaim += codes.length;
    let job!: PhysicalJob;
    const physicalDone = new Promise<void>((resolve, reject) => {
      job = { revision, codes, resolve, reject };
    });
    this.#pendingJobs.push(job);
    return physicalDone;
  }

  /** The first `n` pending compactions, whose schedule the flush under way persists. */
  take(n: number): PhysicalJob[] {
    return this.#pendingJobs.splice(0, n);
  }

  start(job: PhysicalJob): void {
    const running = this.#run(job);
    this.#runningJobs.add(running);
    void running.then(() => this.#runningJobs.delete(running));
  }

  /** Resolves once no physical compaction is running. */
  async settled(): Promise<void> {
    while (this.#runningJobs.size > 0) await Promise.all([...this.#runningJobs]);
  }

  async #run(job: PhysicalJob): Promise<void> {
    const { backend, queue } = this.#h;
    try {
      for (const chunk of chunked(job.codes, compactionBatchKeysMax)) {
        await queue.enqueue(() => backend.write(chunk.map((code) => ({ type: 'del', bucket: 'key', key: codeToBytes(code) }))));
      }
      const finished = revisionToBytes({ main: job.revision, sub: 0 });
      await queue.enqueue(async () => {
        await backend.write([{ type: 'put', bucket: 'meta', key: finishedCompactKey, value: finished }]);
        await queue.measureSize();
      });
      job.resolve();
      // A failed reclaim leaves the tables as they were; the backend's next write reports the failure.
      if (this.#h.reclaimWorthIt(this.#droppedSinceReclaim)) void this.reclaim().catch(() => {});
    } catch (err) {
      job.reject(err);
    }
  }

  /**
   * Called before a write is refused for the quota. Deleted data stays in LevelDB's tables until LevelDB
   * compacts the tables holding it, so when compaction dropped revisions since the last reclaim, the
   * compaction's deletes are written, the tables rewritten (writes go on meanwhile) and the size measured
   * again. Concurrent callers share one reclaim; with nothing dropped since the last, it returns at once, so
   * a store full of live data refuses without rewriting anything.
   */
  reclaim(): Promise<void> {
    if (this.#reclaiming !== undefined) return this.#reclaiming;
    if (this.#droppedSinceReclaim === 0) return Promise.resolve();
    const { backend, queue } = this.#h;
    this.#reclaiming = (async () => {
      await this.#h.flush();
      await Promise.all([...this.#runningJobs]);
      // A compaction whose schedule is not durable yet has not deleted anything: the next refusal retries.
      if (this.#pendingJobs.length === 0) this.#droppedSinceReclaim = 0;
      await backend.defragment();
      await queue.enqueue(() => queue.measureSize());
    })().finally(() => {
      this.#reclaiming = undefined;
    });
    return this.#reclaiming;
  }
}
