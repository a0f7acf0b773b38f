/**
 * The request lifecycle (validate → propose with an id → wait → apply → answer), with etcd's overload
 * refusals: "too many requests" when apply lags commit by more than applyLagEntriesMax or too many proposals
 * are pending, "no leader" when none is known, "request timed out" when the entry is not applied in time.
 */
import { applyLagEntriesMax, pendingProposalsMax } from '../../base/limits.js';
import type { Scheduler } from '../../base/scheduler.js';
import type { ProposeResult as RaftProposeResult } from '../../raft/types.js';
import type { ApplyResult } from '../apply/apply.js';
import { EtcdError, fromProposeError } from '../errors.js';
import { encodeRequest, RequestIdGenerator, type RaftRequest } from '../driver/raft-request.js';
import type { ProposeResult } from './propose-results.js';
import { WaitRegistry } from './wait.js';

export interface ProposerHost {
  propose(data: Uint8Array): RaftProposeResult;
  /** Raft's commit index minus the applied index. */
  applyLag(): number;
  hasLeader(): boolean;
  /** When (Clock.nowMs) the current leader was first seen; undefined before any. */
  leaderElectedMs(): number | undefined;
}

/**
 * etcd's parseProposeCtxErr: a proposal that timed out having started in the two election timeouts before the
 * current leader was elected most likely died with the previous leader: "request timed out, possibly due to
 * previous leader failure" (ErrTimeoutDueToLeaderFail); any other, plain "request timed out" (ErrTimeout).
 */
export function timeoutError(startMs: number, leaderElectedMs: number | undefined, electionMs: number): EtcdError {
  const previousLeaderLostMs = leaderElectedMs === undefined ? undefined : leaderElectedMs - 2 * electionMs;
  const duringElection = leaderElectedMs !== undefined && startMs > previousLeaderLostMs! && startMs < leaderElectedMs;
  return new EtcdError(duringElection ? 'timeoutDueToLeaderFail' : 'timeout');
}

export class Proposer {
  readonly #host: ProposerHost;
  readonly #ids: RequestIdGenerator;
  readonly #waits: WaitRegistry<unknown>;
  readonly #timeoutMs: number;
  readonly #electionMs: number;
  readonly #scheduler: Scheduler | undefined;

  constructor(host: ProposerHost, options: { memberId: bigint; bootTimeMs: number; timeoutMs: number; electionMs: number; scheduler?: Scheduler }) {
    this.#host = host;
    this.#electionMs = options.electionMs;
    this.#scheduler = options.scheduler;
    this.#waits = new WaitRegistry<unknown>(pendingProposalsMax, options.scheduler);
    this.#ids = new RequestIdGenerator(options.memberId, options.bootTimeMs);
    this.#timeoutMs = options.timeoutMs;
  }

  get pending(): number {
    return this.#waits.size;
  }

  nextId(): bigint {
    return this.#ids.next();
  }

  /**
   * Propose and wait for the apply result; refusals from apply are thrown as they are (MvccError). Not async,
   * and no wrapper around the wait (issue 34): the promise returned is the waiter's own, settled by apply with
   * the value, so a put costs one promise here. Refusals come back as rejected promises, never thrown.
   */
  propose<R extends RaftRequest>(req: R, signal?: AbortSignal): Promise<ProposeResult<R>> {
    if (this.#host.applyLag() > applyLagEntriesMax || this.#waits.full) return Promise.reject(new EtcdError('tooManyRequests'));
    if (!this.#host.hasLeader()) return Promise.reject(new EtcdError('noLeader'));
    const id = this.#ids.next();
    const startMs = this.#scheduler?.nowMs() ?? 0;
    const waiting = this.#waits.register(id, this.#timeoutMs, () =>
      this.#scheduler === undefined ? new EtcdError('timeout') : timeoutError(startMs, this.#host.leaderElectedMs(), this.#electionMs),
    );
    const r = this.#host.propose(encodeRequest({ id, req }));
    if (!r.ok) this.#waits.fail(id, fromProposeError(r.error));
    if (signal !== undefined) {
      const onAbort = (): void => this.#waits.fail(id, new EtcdError('canceled'));
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    // Apply answers each kind with its ProposeResults type (the one place that relies on it).
    return waiting as Promise<ProposeResult<R>>;
  }

  /** Called by apply for every applied request entry; only this member's own ids have a waiter. */
  applied(id: bigint, result: ApplyResult): void {
    if (result.ok) this.#waits.trigger(id, result.value);
    else this.#waits.fail(id, result.error);
  }

  failAll(error: unknown): void {
    this.#waits.failAll(error);
  }
}
