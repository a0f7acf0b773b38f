/**
 * Linearizable reads (etcd's linearizableReadLoop): every read waiting at a moment shares one ReadIndex
 * request; when Raft answers with a read index, all of them wait until the applied index reaches it, then
 * read locally. A request Raft drops (no leader, leadership lost) is retried until the read times out.
 * No clock leases: the leader confirms its leadership with a heartbeat quorum each time.
 *
 * Every read ends within its deadline, whatever it waits for: the read index, or apply to reach it (an apply
 * that stalls or stopped fails it with the timeout error, as a request context's deadline ends etcd's wait);
 * and failAll (the member stops) ends every read, those waiting for apply included (etcd: ErrStopped).
 */
import type { ReadState } from '../../raft/types.js';
import type { Scheduler, TimerHandle } from '../../base/scheduler.js';
import type { AppliedWait } from './applied-wait.js';

interface Pending {
  resolve: () => void;
  reject: (error: unknown) => void;
  deadlineMs: number;
}

export interface ReadIndexOptions {
  /** Ask Raft for a read index with this context. */
  request(context: Uint8Array): void;
  appliedWait: AppliedWait;
  /** Re-ask after this long without an answer (etcd: readIndexRetryTime 500 ms). */
  retryMs: number;
  timeoutMs: number;
  timeoutError: () => unknown;
  /** Time, retry timer and the next-turn batching. */
  scheduler: Scheduler;
  /**
   * etcd_server_slow_read_indexes_total and etcd_server_read_indexes_failed_total, counted where etcd's
   * linearizableReadLoop counts them: a request unanswered within retryMs or an answer to an older request
   * (slow); a request that leadership lost (failed).
   */
  onSlow?: () => void;
  onFailed?: () => void;
}

export class ReadIndexBatcher {
  readonly #o: ReadIndexOptions;
  #waiting: Pending[] = [];
  #inflight: { context: bigint; readers: Pending[]; sentMs: number } | undefined;
  /** Readers whose read index Raft answered, by that index, waiting for apply to reach it. */
  #applying = new Map<number, Pending[]>();
  #nextContext = 1n;
  #timer: TimerHandle | undefined;
  #issueScheduled = false;

  constructor(options: ReadIndexOptions) {
    this.#o = options;
  }

  /** Resolves once a local read reflects every write acknowledged before this call. */
  read(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject, deadlineMs: this.#o.scheduler.nowMs() + this.#o.timeoutMs });
      this.#scheduleIssue();
      this.#arm();
    });
  }

  onReadStates(states: ReadState[]): void {
    const inflight = this.#inflight;
    if (inflight === undefined) return;
    for (const rs of states) {
      if (rs.context.length !== 8) continue;
      const ctx = Buffer.from(rs.context).readBigUInt64BE(0);
      if (ctx !== inflight.context) {
        // An answer to a request already retried: this member's reads are queueing behind the leader's.
        if (ctx < inflight.context) this.#o.onSlow?.();
        continue;
      }
      this.#inflight = undefined;
      this.#awaitApplied(rs.index, inflight.readers);
      if (this.#waiting.length > 0) this.#issue();
      return;
    }
  }

  /** Leadership changed: reads in flight may have been dropped; ask again (etcd fails them with "leader changed"). */
  onLeaderChange(error: unknown): void {
    const inflight = this.#inflight;
    if (inflight === undefined) return;
    this.#inflight = undefined;
    this.#o.onFailed?.();
    for (const r of inflight.readers) r.reject(error);
    if (this.#waiting.length > 0) this.#issue();
  }

  failAll(error: unknown): void {
    const all = [...this.#waiting, ...(this.#inflight?.readers ?? []), ...[...this.#applying.values()].flat()];
    this.#waiting = [];
    this.#inflight = undefined;
    this.#applying.clear();
    for (const r of all) r.reject(error);
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** Readers sharing one read index share one wait for apply (a stalled apply holds one waiter per index). */
  #awaitApplied(index: number, readers: Pending[]): void {
    const group = this.#applying.get(index);
    if (group !== undefined) {
      group.push(...readers);
      return;
    }
    this.#applying.set(index, [...readers]);
    this.#o.appliedWait.wait(index).then(
      () => this.#release(index, (r) => r.resolve()),
      (error: unknown) => this.#release(index, (r) => r.reject(error)),
    );
  }

  #release(index: number, settle: (r: Pending) => void): void {
    const group = this.#applying.get(index) ?? [];
    this.#applying.delete(index);
    for (const r of group) settle(r);
  }

  /**
   * Reads that arrive in the same event-loop turn (many gRPC calls decoded from one socket read) share one
   * request. A read that arrives after a request left must wait for the next one: the leader may have
   * handled the earlier request before a write this read must see was acknowledged.
   */
  #scheduleIssue(): void {
    if (this.#inflight !== undefined || this.#issueScheduled) return;
    this.#issueScheduled = true;
    this.#o.scheduler.soon(() => {
      this.#issueScheduled = false;
      if (this.#inflight === undefined && this.#waiting.length > 0) this.#issue();
    });
  }

  #issue(): void {
    const context = this.#nextContext++;
    this.#inflight = { context, readers: this.#waiting, sentMs: this.#o.scheduler.nowMs() };
    this.#waiting = [];
    const bytes = Buffer.alloc(8);
    bytes.writeBigUInt64BE(context);
    this.#o.request(bytes);
  }

  /** One timer drives retries and deadlines while anything is pending. */
  #arm(): void {
    if (this.#timer !== undefined) return;
    this.#timer = this.#o.scheduler.after(this.#o.retryMs, () => {
      this.#timer = undefined;
      this.#check();
    });
  }

  #check(): void {
    const now = this.#o.scheduler.nowMs();
    const expire = (list: Pending[]): Pending[] => {
      const keep: Pending[] = [];
      for (const r of list) {
        if (r.deadlineMs <= now) r.reject(this.#o.timeoutError());
        else keep.push(r);
      }
      return keep;
    };
    this.#waiting = expire(this.#waiting);
    const inflight = this.#inflight;
    if (inflight !== undefined) {
      inflight.readers = expire(inflight.readers);
      if (now - inflight.sentMs >= this.#o.retryMs) {
        // No answer: Raft dropped it or it is slow. Ask again with a fresh context for the same readers.
        this.#inflight = undefined;
        this.#o.onSlow?.();
        this.#waiting = [...inflight.readers, ...this.#waiting];
      }
    }
    let applying = 0;
    for (const [index, group] of this.#applying) {
      const kept = expire(group);
      this.#applying.set(index, kept);
      applying += kept.length;
    }
    if (this.#inflight === undefined && this.#waiting.length > 0) this.#issue();
    if (this.#waiting.length > 0 || (this.#inflight?.readers.length ?? 0) > 0 || applying > 0) this.#arm();
    else if (this.#inflight !== undefined) this.#inflight = undefined;
  }
}
