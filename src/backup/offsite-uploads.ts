/**
 * Off-site copies of scheduled snapshots (k3s's --etcd-s3): after a snapshot is saved and its hash verified
 * on disk, it is uploaded to the bucket, then the bucket's retention applies (the newest `retention` of this
 * member's scheduled snapshots stay). A failed upload is logged, counted, and tried again after a growing
 * wait (s3RetryDelayMs × 2^n, at most s3RetryDelayMsMax, s3UploadAttemptsMax tries in all).
 *
 * Nothing here is awaited by the member: `enqueue` returns at once and the work runs beside the Raft loop on
 * the event loop (file reads and sockets; hashing one part at a time). One upload runs at a time; a snapshot
 * that arrives meanwhile waits, and only the newest waiting one is kept (an older one is superseded: the
 * bucket wants the latest state, and a dead bucket must not grow a queue).
 *
 * Metrics (ours, beside the scheduler's etcetera_snapshot_*):
 *   etcetera_snapshot_s3_upload_total{result="success"|"failure"}   (every attempt)
 *   etcetera_snapshot_s3_last_success_timestamp_seconds, etcetera_snapshot_s3_last_failure_timestamp_seconds
 */
import { s3RetryDelayMs, s3RetryDelayMsMax, s3UploadAttemptsMax } from '../base/limits.js';
import type { Registry } from '../metrics/metrics.js';
import type { SchedulerLogger, SchedulerTimers } from './snapshot-scheduler.js';

/** The bucket as uploads need it (s3-store.ts's S3Store; a fake in unit tests). */
export interface UploadTarget {
  location(name: string): string;
  upload(path: string): Promise<{ sizeBytes: number }>;
  prune(nodeName: string, retention: number): Promise<string[]>;
}

/** What `etcetera status` shows (main/member-status.ts): null before the first of each. */
export interface OffsiteStatus {
  bucket: string;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  lastError: string | null;
  /** Failed attempts since the last success (0 when the last attempt succeeded). */
  failuresSinceSuccess: number;
  /** A snapshot waiting for its upload or its next try. */
  pending: boolean;
}

export interface OffsiteUploadsOptions {
  /** For the status (s3://bucket/folder). */
  bucketUrl: string;
  /** Opens the bucket (loads the client): called at the first upload, and again after a failed open. */
  open(): Promise<UploadTarget>;
  /** Checks the local file before it leaves (etcd's SHA-256 trailer). */
  verify(path: string): Promise<void>;
  nodeName: string;
  retention: number;
  now(): number;
  timers: SchedulerTimers;
  logger: SchedulerLogger;
  registry: Registry;
}

export class OffsiteUploads {
  readonly #o: OffsiteUploadsOptions;
  #target: Promise<UploadTarget> | undefined;
  #next: string | undefined;
  #running: Promise<void> | undefined;
  #retryTimer: unknown;
  #stopped = false;
  #status: OffsiteStatus;
  readonly #attempts;
  readonly #lastSuccess;
  readonly #lastFailure;

  constructor(o: OffsiteUploadsOptions) {
    this.#o = o;
    this.#status = { bucket: o.bucketUrl, lastSuccessAt: null, lastFailureAt: null, lastError: null, failuresSinceSuccess: 0, pending: false };
    this.#attempts = o.registry.counter({ name: 'etcetera_snapshot_s3_upload_total', help: 'Uploads of snapshots to the S3 bucket attempted, by result.', labelNames: ['result'] });
    this.#lastSuccess = o.registry.gauge({ name: 'etcetera_snapshot_s3_last_success_timestamp_seconds', help: 'Unix time of the last snapshot uploaded to the S3 bucket.' });
    this.#lastFailure = o.registry.gauge({ name: 'etcetera_snapshot_s3_last_failure_timestamp_seconds', help: 'Unix time of the last failed upload to the S3 bucket.' });
  }

  status(): OffsiteStatus {
    return { ...this.#status, pending: this.#next !== undefined || this.#running !== undefined };
  }

  /** Uploads `path` soon; returns at once. */
  enqueue(path: string): void {
    if (this.#stopped) return;
    if (this.#next !== undefined && this.#next !== path) this.#o.logger.warn('s3 upload superseded by a newer snapshot', { path: this.#next });
    this.#next = path;
    if (this.#running === undefined && this.#retryTimer === undefined) this.#start(0);
  }

  /** Stops retrying and waits for an upload in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retryTimer !== undefined) this.#o.timers.clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    await this.#running;
  }

  #start(attempt: number): void {
    const path = this.#next;
    if (path === undefined || this.#stopped) return;
    this.#next = undefined;
    this.#running = this.#attempt(path, attempt).finally(() => {
      this.#running = undefined;
      if (this.#retryTimer === undefined) this.#start(0);
    });
  }

  async #attempt(path: string, attempt: number): Promise<void> {
    const o = this.#o;
    try {
      await o.verify(path);
      const target = await this.#open();
      const { sizeBytes } = await target.upload(path);
      const pruned = await target.prune(o.nodeName, o.retention);
      this.#attempts.inc(1, { result: 'success' });
      this.#lastSuccess.set(o.now() / 1000);
      this.#status = { ...this.#status, lastSuccessAt: new Date(o.now()).toISOString(), failuresSinceSuccess: 0, lastError: null };
      o.logger.info('snapshot uploaded to s3', { path, location: target.location(path.slice(path.lastIndexOf('/') + 1)), sizeBytes, pruned });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.#attempts.inc(1, { result: 'failure' });
      this.#lastFailure.set(o.now() / 1000);
      this.#status = { ...this.#status, lastFailureAt: new Date(o.now()).toISOString(), lastError: message, failuresSinceSuccess: this.#status.failuresSinceSuccess + 1 };
      const last = attempt + 1 >= s3UploadAttemptsMax;
      o.logger.error('snapshot upload to s3 failed', { path, attempt: attempt + 1, of: s3UploadAttemptsMax, error: message, ...(last ? { givingUp: true } : {}) });
      // A newer snapshot waiting replaces the retry; otherwise try this one again later.
      if (!last && this.#next === undefined && !this.#stopped) {
        this.#next = path;
        this.#retryTimer = o.timers.setTimeout(() => {
          this.#retryTimer = undefined;
          if (this.#running === undefined) this.#startRetry(path, attempt + 1);
        }, retryDelayMs(attempt));
      }
    }
  }

  #startRetry(path: string, attempt: number): void {
    if (this.#next !== path) return this.#start(0); // superseded while waiting
    this.#start(attempt);
  }

  #open(): Promise<UploadTarget> {
    this.#target ??= this.#o.open().catch((error: unknown) => {
      this.#target = undefined;
      throw error;
    });
    return this.#target;
  }
}

/** The wait before try n+1 (n from 0): doubling from s3RetryDelayMs, capped. */
export function retryDelayMs(attempt: number): number {
  return Math.min(s3RetryDelayMs * 2 ** attempt, s3RetryDelayMsMax);
}
