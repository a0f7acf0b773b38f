/**
 * etcd's auto-compaction, run by the leader and replicated as ordinary Compact requests.
 * - periodic (retention = a duration; a bare number means hours, as etcd): every retention/10 the current
 *   revision is sampled; each compaction keeps the history of the last `retention`.
 * - revision (retention = a revision count): every 5 minutes, compact to current − retention.
 */
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
  nowMs(): number;
  logger: { info(msg: string, fields?: Record<string, unknown>): void; warn(msg: string, fields?: Record<string, unknown>): void };
}

/** etcd: revision-mode compaction runs every 5 minutes. */
export const revisionCompactionIntervalMs = 5 * 60 * 1000;

export class AutoCompactor {
  readonly #h: CompactorHost;
  readonly #mode: 'periodic' | 'revision';
  readonly #retentionMs: number;
  readonly #retentionRevisions: number;
  /** periodic: (time, revision) samples; the oldest one at least `retention` old is the compaction point. */
  #samples: Array<{ atMs: number; revision: number }> = [];
  #timer: NodeJS.Timeout | undefined;

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

  get intervalMs(): number {
    return this.#mode === 'periodic' ? Math.max(1000, Math.min(this.#retentionMs / 10, 3600_000)) : revisionCompactionIntervalMs;
  }

  start(): void {
    this.#timer = setInterval(() => void this.tick(), this.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
  }

  async tick(): Promise<void> {
    const now = this.#h.nowMs();
    this.#samples.push({ atMs: now, revision: this.#h.revision() });
    if (!this.#h.isLeader()) return;
    let target: number;
    if (this.#mode === 'periodic') {
      const old = this.#samples.filter((s) => now - s.atMs >= this.#retentionMs);
      if (old.length === 0) return;
      target = old[old.length - 1]!.revision;
      this.#samples = this.#samples.filter((s) => now - s.atMs < this.#retentionMs);
    } else {
      target = this.#h.revision() - this.#retentionRevisions;
    }
    if (target <= this.#h.compactRevision() || target <= 0) return;
    try {
      await this.#h.compact(target);
      this.#h.logger.info('auto-compacted', { revision: target, mode: this.#mode });
    } catch (error) {
      if (error instanceof MvccError && error.code === 'compacted') return;
      this.#h.logger.warn('auto-compaction failed', { revision: target, error: String(error) });
    }
  }
}
