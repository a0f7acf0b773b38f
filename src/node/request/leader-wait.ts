/**
 * The first step of the request pipeline: refuse on a stopped member, wait (bounded) for a leader; and the
 * linearizable barrier (a leader, then a ReadIndex). The request pipeline, the Auth API and maintenance all
 * need these: RequestBarrier is built before any of them, so none reaches another through a late-bound closure.
 */
import type { Scheduler } from '../../base/scheduler.js';
import type { RequestContext } from '../api-types.js';
import { EtcdError } from '../errors.js';
import type { ReadIndexBatcher } from './read-index.js';
import { leaderWaitMs } from './timeouts.js';

export interface LeaderWaitHost {
  stopped(): boolean;
  hasLeader(): boolean;
  onLeaderChange(listener: (leader: bigint) => void): () => void;
  electionMs: number;
  scheduler: Scheduler;
}

export function checkAlive(h: LeaderWaitHost, ctx: RequestContext): void {
  if (h.stopped()) throw new EtcdError('stopped');
  if (ctx.requireLeader && !h.hasLeader()) throw new EtcdError('noLeader');
  // ctx.signal is not read here: creating it costs an AbortController per call, and a write that was
  // proposed completes (or times out) whether or not its client is still waiting.
}

/**
 * Requests that need a leader wait a bounded time for one (an election takes one to two election
 * timeouts) rather than failing at once: clients such as etcd3 open a circuit breaker on UNAVAILABLE.
 */
export async function awaitLeader(h: LeaderWaitHost, ctx: RequestContext): Promise<void> {
  checkAlive(h, ctx);
  if (h.hasLeader()) return;
  await new Promise<void>((resolve, reject) => {
    const done = (error?: unknown): void => {
      timer.cancel();
      off();
      ctx.signal.removeEventListener('abort', onAbort);
      if (error === undefined) resolve();
      else reject(error);
    };
    const timer = h.scheduler.after(leaderWaitMs(h.electionMs), () => done(new EtcdError('noLeader')));
    const off = h.onLeaderChange((leader) => {
      if (leader !== 0n) done();
    });
    const onAbort = (): void => done(new EtcdError('canceled'));
    if (ctx.signal.aborted) onAbort();
    else ctx.signal.addEventListener('abort', onAbort, { once: true });
  });
}

export interface RequestBarrierHost extends LeaderWaitHost {
  reads: Pick<ReadIndexBatcher, 'read'>;
  /** Test fault skip-read-index (src/config/test-faults.ts): the barrier only waits for a leader. */
  skipReadIndex: boolean;
}

export class RequestBarrier {
  readonly #h: RequestBarrierHost;

  constructor(host: RequestBarrierHost) {
    this.#h = host;
  }

  checkAlive(ctx: RequestContext): void {
    checkAlive(this.#h, ctx);
  }

  awaitLeader(ctx: RequestContext): Promise<void> {
    return awaitLeader(this.#h, ctx);
  }

  /** Resolves once a local read reflects every write acknowledged before the call (ReadIndex). */
  async linearizableBarrier(ctx: RequestContext): Promise<void> {
    await awaitLeader(this.#h, ctx);
    if (this.#h.skipReadIndex) return;
    await this.#h.reads.read();
  }
}
