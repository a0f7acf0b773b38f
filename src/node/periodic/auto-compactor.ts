/**
 * etcd's auto-compaction (server/etcdserver/api/v3compactor: periodic.go, revision.go), run by the leader and
 * replicated as ordinary Compact requests, on the member's Scheduler (the simulator's clock in tests).
 *
 * - periodic (retention = a duration; a bare number means hours, as etcd): every min(retention, 1 h)/10 the
 *   current revision is sampled into a window of retention/interval + 1 samples, so the oldest sample is the
 *   revision of one retention ago. The first compaction comes one retention after start, the next ones every
 *   min(retention, 1 h), each to the window's oldest sample (skipped when that is the last one compacted to).
 * - revision (retention = a revision count): every 5 minutes, compact to current − retention.
 *
 * A follower keeps sampling (etcd pauses its compactor on followers; the window still slides), so a new leader
 * compacts with the history it saw, and proposes nothing. The window is the only state that grows, and it
 * holds at most `windowSamplesMax` revisions; revision mode keeps none. A compaction already at or past the
 * target counts as done, as etcd counts ErrCompacted.
 *
 * Worked example, retention 10 s (sample every 1 s, window of 11): samples at t = 0, 1, …, 9 s; at t = 10 s
 * ten seconds have passed since start, so it compacts to the sample of t = 0 and then samples t = 10 (the
 * window is t = 0…10). At t = 11 the window drops t = 0; the next compaction is due at t = 20, to the window's
 * oldest then, t = 9 (etcd: "revs[0] is always the rev at pc.period ago", give or take one interval).
 */
import type { Scheduler, TimerHandle } from '../../base/scheduler.js';
import { parseRetentionMs } from '../../config/duration.js';
import { MvccError } from '../../mvcc/types.js';

export interface AutoCompaction {
  mode: 'periodic' | 'revision';
  retention: string;
}

export interface CompactorHost {
  isLeader(): boolean;
  revision(): number;
  compactRevision(): number;
  compact(revision: number): Promise<void>;
  scheduler: Scheduler;
  logger: { info(msg: string, fields?: Record<string, unknown>): void; warn(msg: string, fields?: Record<string, unknown>): void };
}

/** etcd: revision-mode compaction runs every 5 minutes (revInterval). */
export const revisionCompactionIntervalMs = 5 * 60 * 1000;
/** etcd: periodic compaction runs at most every hour, and samples ten times per run (retryDivisor). */
const periodicIntervalMsMax = 60 * 60 * 1000;
const samplesPerInterval = 10;

export class AutoCompactor {
  readonly #h: CompactorHost;
  readonly #mode: 'periodic' | 'revision';
  readonly #retentionMs: number;
  readonly #retentionRevisions: number;
  /** periodic: revisions sampled every intervalMs, oldest first; at most windowSamplesMax. */
  #window: number[] = [];
  /** The last revision compacted to (or found compacted): not proposed again. */
  #lastRevision = 0;
  #lastSuccessMs = 0;
  /** periodic: time since the last success before the next compaction (one retention at first). */
  #waitMs = 0;
  #compacting = false;
  #timer: TimerHandle | undefined;

  constructor(host: CompactorHost, config: AutoCompaction) {
    this.#h = host;
    this.#mode = config.mode;
    if (config.mode === 'periodic') {
      const ms = parseRetentionMs(config.retention);
      if (ms === undefined) throw new TypeError(`bad --auto-compaction-retention ${JSON.stringify(config.retention)} (use e.g. 1h, 30m, 1h30m)`);
      this.#retentionMs = ms;
      this.#retentionRevisions = 0;
      if (this.#retentionMs <= 0) throw new TypeError('periodic auto-compaction retention must be positive');
    } else {
      this.#retentionMs = 0;
      this.#retentionRevisions = Number(config.retention);
      if (!Number.isSafeInteger(this.#retentionRevisions) || this.#retentionRevisions <= 0) {
        throw new TypeError(`bad revision retention ${JSON.stringify(config.retention)}`);
      }
    }
  }

  /** How often a turn runs: etcd's retry interval (periodic), revInterval (revision). */
  get intervalMs(): number {
    return this.#mode === 'periodic' ? this.#compactIntervalMs / samplesPerInterval : revisionCompactionIntervalMs;
  }

  /** periodic: the window's bound (etcd's getRetentions: retention / interval + 1); revision: none kept. */
  get windowSamplesMax(): number {
    return this.#mode === 'periodic' ? Math.floor((this.#retentionMs * samplesPerInterval) / this.#compactIntervalMs) + 1 : 0;
  }

  /** Revisions held in the window now. */
  get samples(): number {
    return this.#window.length;
  }

  get #compactIntervalMs(): number {
    return Math.min(this.#retentionMs, periodicIntervalMsMax);
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#lastSuccessMs = this.#h.scheduler.nowMs();
    this.#waitMs = this.#retentionMs;
    if (this.#mode === 'periodic') this.#sample();
    this.#timer = this.#h.scheduler.every(this.intervalMs, () => void this.#turn(), { background: true });
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** One turn of etcd's loop. Never rejects: a failed compaction is logged and retried at a later turn. */
  #turn(): Promise<void> {
    return this.#mode === 'periodic' ? this.#periodicTurn() : this.#revisionTurn();
  }

  async #periodicTurn(): Promise<void> {
    const target = this.#window[0]!;
    const due = !this.#compacting && this.#h.isLeader() && this.#h.scheduler.nowMs() - this.#lastSuccessMs >= this.#waitMs && target !== this.#lastRevision;
    // etcd samples at the top of its next turn, after the compaction: the same revision, as a compaction adds none.
    this.#sample();
    if (!due) return;
    this.#waitMs = this.#compactIntervalMs;
    await this.#compact(target);
  }

  async #revisionTurn(): Promise<void> {
    if (this.#compacting || !this.#h.isLeader()) return;
    const target = this.#h.revision() - this.#retentionRevisions;
    if (target <= 0 || target === this.#lastRevision) return;
    await this.#compact(target);
  }

  #sample(): void {
    this.#window.push(this.#h.revision());
    if (this.#window.length > this.windowSamplesMax) this.#window.shift();
  }

  async #compact(revision: number): Promise<void> {
    this.#compacting = true;
    try {
      if (revision > this.#h.compactRevision()) {
        await this.#h.compact(revision);
        this.#h.logger.info('auto-compacted', { revision, mode: this.#mode });
      }
      this.#succeeded(revision);
    } catch (error) {
      if (error instanceof MvccError && error.code === 'compacted') this.#succeeded(revision);
      else this.#h.logger.warn('auto-compaction failed', { revision, mode: this.#mode, error: String(error) });
    } finally {
      this.#compacting = false;
    }
  }

  #succeeded(revision: number): void {
    this.#lastRevision = revision;
    this.#lastSuccessMs = this.#h.scheduler.nowMs();
  }
}
