/**
 * The saves waiting for the next batch, and group commit: saves that arrive while a batch is written and
 * synced form the next one, capped at the profile's batchBytesMax; with a commit delay a batch waits at most
 * that long for the writers of the last sync to be back beside those already waiting.
 */
import type { TimerHandle } from '../base/scheduler.js';
import type { SaveRequest } from './save-request.js';

/** The one timer the log needs: the commit-delay window (the simulator passes its seeded scheduler's). */
export interface WindowTimer {
  after(ms: number, fn: () => void): TimerHandle;
}

/** Node's timer, for a log opened without a scheduler. */
export const nodeWindowTimer: WindowTimer = {
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(t) };
  },
};

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
  #batchBytesMax: number;
  #commitDelayMs: number;
  #queue: PendingSave[] = [];
  #queuedBytes = 0;
  /** Entries queued (a save without entries counts as one): what the commit-delay window measures. */
  #queuedUnits = 0;
  /**
   * The units a commit-delay window waits for: those the last durable batch carried plus those that were
   * already queued when it became durable (see batchDurable).
   */
  #fillTarget = 0;
  /** The units of the batch being written and synced. */
  #inFlightUnits = 0;
  /** Ends the commit-delay window in progress early (the batch is full). */
  #endWindow: (() => void) | undefined;

  readonly #timer: WindowTimer;

  constructor(tuning: { batchBytesMax: number; commitDelayMs: number }, timer: WindowTimer = nodeWindowTimer) {
    this.#batchBytesMax = tuning.batchBytesMax;
    this.#commitDelayMs = tuning.commitDelayMs;
    this.#timer = timer;
  }

  /** A recalibrated profile's knobs (profile-calibration.ts), from the next batch on. */
  retune(tuning: { batchBytesMax: number; commitDelayMs: number }): void {
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
   * Group commit under concurrency: the batch is full at the byte cap, or once the queue holds the fill
   * target: the entries the last sync made durable (their writers, answered, come back) plus those that
   * queued behind that sync. Counting only the last batch would lock closed-loop writers into two groups
   * taking turns, each sync carrying half of them (16 clients at 20 ms per fsync: 8 entries per sync, every
   * put waiting two syncs); with both, the groups merge into one within a sync. A lone writer (one entry,
   * nothing queued) is always full, so it waits for exactly one sync.
   */
  #batchFull(): boolean {
    return this.#queuedUnits >= this.#fillTarget || this.#queuedBytes >= this.#batchBytesMax;
  }

  /** Waits at most commitDelayMs for the batch to fill; push ends the wait early when it does. */
  #commitWindow(): Promise<void> {
    return new Promise((resolve) => {
      const end = (): void => {
        timer.cancel();
        this.#endWindow = undefined;
        resolve();
      };
      const timer = this.#timer.after(this.#commitDelayMs, end);
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
    this.#inFlightUnits = units;
    return this.#queue.splice(0, count);
  }

  /** The batch taken last is durable: the next window waits for its writers and those queued behind it. */
  batchDurable(): void {
    this.#fillTarget = this.#inFlightUnits + this.#queuedUnits;
    this.#inFlightUnits = 0;
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
