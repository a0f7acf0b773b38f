/**
 * The store's one FIFO queue of backend I/O (flushes, physical compaction chunks, snapshot export,
 * defragment), which keeps batches in order and makes an export a consistent point-in-time copy; and the
 * backend's size as last measured plus what was written since.
 */
import type { Backend } from './backend.js';

export class BackendQueue {
  readonly #backend: Backend;
  #io: Promise<void> = Promise.resolve();
  #sizeBytes = 0;
  /** Bytes handed to the backend since #sizeBytes was measured (LevelDB's estimate misses its memtable). */
  #bytesSinceSize = 0;
  /** Memory held by flush batches queued and not yet written (key and value bytes plus batchOpOverheadBytes an op). */
  #pendingBytes = 0;

  constructor(backend: Backend) {
    this.#backend = backend;
  }

  /** Settles when everything queued so far is done (never rejects). */
  get tail(): Promise<void> {
    return this.#io;
  }

  enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.#io.then(task);
    this.#io = run.catch(() => {});
    return run;
  }

  /**
   * Queue a flush batch holding `memoryBytes`: counted in `pendingBytes` until the backend has
   * written it, so the store's backlog is known and apply can wait on it instead of queueing without bound.
   */
  enqueueBatch(memoryBytes: number, task: () => Promise<void>): Promise<void> {
    this.#pendingBytes += memoryBytes;
    return this.enqueue(async () => {
      try {
        await task();
      } finally {
        this.#pendingBytes -= memoryBytes;
      }
    });
  }

  /** Memory held by queued flush batches not yet written. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  async measureSize(): Promise<void> {
    const pending = this.#bytesSinceSize;
    this.#sizeBytes = await this.#backend.sizeBytes();
    this.#bytesSinceSize -= pending;
  }

  /** Count bytes handed to the backend, until the next measurement includes them. */
  wrote(bytes: number): void {
    this.#bytesSinceSize += bytes;
  }

  /** The size as last measured plus the bytes written since. */
  get sizeBytes(): number {
    return this.#sizeBytes + Math.max(0, this.#bytesSinceSize);
  }
}
