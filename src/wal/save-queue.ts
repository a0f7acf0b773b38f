/**
 * The saves waiting for the next batch, and group commit: saves that arrive while a batch is written and
 * synced form the next one, capped at the profile's batchBytesMax; with a commit delay a batch waits at most
 * that long to hold as many entries as the last one did.
 */
import type { SaveRequest } from './save-request.js';

export interface PendingSave {
  request: SaveRequest;
  /** Call order, to tell which of two hard states is newer. */
  seq: number;
  bytesBound: number;
  /** Its entries, or 1 for a save without entries. */
  units: number;
  /** A snapshot file that must be durable before this save's meta record is written. */
  ready: Promise<void> | undefined;
  resolve: () => void;
  reject: (err: Error) => void;
}

export class SaveQueue {
  readonly #batchBytesMax: number;
  readonly #commitDelayMs: number;
  #queue: PendingSave[] = [];
  #queuedBytes = 0;
  /** Entries queued (a save without entries counts as one): what the commit-delay window measures. */
  #queuedUnits = 0;
  /** The units the last batch carried: a commit-delay window ends once the queue holds as many. */
  #fillTarget = 0;
  /** Ends the commit-delay window in progress early (the batch is full). */
  #endWindow: (() => void) | undefined;

  constructor(tuning: { batchBytesMax: number; commitDelayMs: number }) {
    this.#batchBytesMax = tuning.batchBytesMax;
    this.#commitDelayMs = tuning.commitDelayMs;
  }

  get length(): number {
    return this.#queue.length;
  }

  get head(): PendingSave | undefined {
    return this.#queue[0];
  }

  push(save: PendingSave): void {
    this.#queue.push(save);
    this.#queuedBytes += save.bytesBound;
    this.#queuedUnits += save.units;
    if (this.#endWindow !== undefined && this.#batchFull()) this.#endWindow();
  }

  /**
   * With a commit delay and a batch not full yet: a wait for it to fill, at most the delay. Otherwise
   * nothing, so the caller takes the batch in the same turn (an await would let more saves in).
   */
  waitToFill(): Promise<void> | undefined {
    return this.#commitDelayMs > 0 && !this.#batchFull() ? this.#commitWindow() : undefined;
  }

  /**
   * Group commit under concurrency: the batch is full once the queue holds as many entries as the last batch
   * carried (the writers of that batch are back), or the byte cap. A lone writer (last batch: one entry) is
   * always full, so it waits for exactly one sync; writes that queued behind a sync fill the next batch at
   * once whenever there are as many of them as before.
   */
  #batchFull(): boolean {
    return this.#queuedUnits >= this.#fillTarget || this.#queuedBytes >= this.#batchBytesMax;
  }

  /** Waits at most commitDelayMs for the batch to fill; push ends the wait early when it does. */
  #commitWindow(): Promise<void> {
    return new Promise((resolve) => {
      const end = (): void => {
        clearTimeout(timer);
        this.#endWindow = undefined;
        resolve();
      };
      const timer = setTimeout(end, this.#commitDelayMs);
      this.#endWindow = end;
    });
  }

  /** The next batch: queued saves up to the byte cap, never past a save that waits for a snapshot file. */
  takeBatch(): PendingSave[] {
    let count = 0;
    let bytes = 0;
    let units = 0;
    for (const next of this.#queue) {
      if (count > 0 && (next.ready || bytes + next.bytesBound > this.#batchBytesMax)) break;
      bytes += next.bytesBound;
      units += next.units;
      count++;
    }
    this.#queuedBytes -= bytes;
    this.#queuedUnits -= units;
    this.#fillTarget = units;
    return this.#queue.splice(0, count);
  }

  /** Everything queued, removed (the log failed: each is rejected). */
  takeAll(): PendingSave[] {
    const all = this.#queue;
    this.#queue = [];
    this.#queuedBytes = 0;
    this.#queuedUnits = 0;
    return all;
  }
}
