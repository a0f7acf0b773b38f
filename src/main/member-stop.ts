/**
 * How a running member (or witness) stops. Two things every part of it needs, built first so that nothing is
 * patched in later:
 * - the stop's stages, in the order of the stop (not the reverse of the start: a leader hands over and the store
 *   flushes before the client port closes, as etcd stops), each added as its part is built;
 * - requests to stop from inside (removed from the cluster, a fatal error, a peer refusing us as removed), which
 *   parts built before the stop sequence can make.
 * A start that fails half-way runs the stages added so far.
 */
import { assert } from '../base/assert.js';
import type { Logger } from '../config/log.js';

export class MemberStop<Stage extends string> {
  readonly #log: Logger;
  readonly #order: readonly Stage[];
  readonly #steps = new Map<Stage, () => unknown>();
  readonly #stoppedMessage: string;
  #armed = false;
  #reason: string | undefined;
  #running: Promise<void> | undefined;
  #resolveStopped: (v: { reason: string }) => void = () => {};
  /** Resolves when the member stops by itself (removed from the cluster, or a fatal error), with why. */
  readonly stopped = new Promise<{ reason: string }>((resolve) => (this.#resolveStopped = resolve));

  constructor(log: Logger, order: readonly Stage[], stoppedMessage: string) {
    this.#log = log;
    this.#order = order;
    this.#stoppedMessage = stoppedMessage;
  }

  /** The step that stops one part, run at its place in the order. */
  add(stage: Stage, step: () => unknown): void {
    assert(!this.#steps.has(stage), `stop stage ${stage} added twice`);
    assert(this.#running === undefined, `stop stage ${stage} added while stopping`);
    this.#steps.set(stage, step);
  }

  /** Stops the member from inside; the first reason is the one reported. */
  request(reason: string): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#resolveStopped({ reason });
    if (this.#armed) void this.run().catch(() => {});
  }

  /** A fault the member cannot go on after (a failed fsync, a broken invariant of its state). */
  fatal(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.#log.error('fatal error; stopping', { error: message });
    this.request(`fatal: ${message}`);
  }

  /** The member runs: from now on a request stops it (one made while it started stops it now). */
  arm(): void {
    this.#armed = true;
    if (this.#reason !== undefined) void this.run().catch(() => {});
  }

  /**
   * Runs every added stage once, in order, timing each (a stop must fit a service manager's timeout; etcd:
   * under 2 s). A stage that fails is logged and the rest still run (the log and the store must still close);
   * the first failure rejects.
   */
  run(): Promise<void> {
    return (this.#running ??= (async () => {
      const ms: Record<string, number> = {};
      let failure: unknown;
      for (const stage of this.#order) {
        const step = this.#steps.get(stage);
        if (step === undefined) continue;
        const t0 = performance.now();
        try {
          await step();
        } catch (error) {
          this.#log.error('a stop stage failed', { stage, error: error instanceof Error ? error.message : String(error) });
          failure ??= error;
        }
        ms[stage] = Math.round(performance.now() - t0);
      }
      this.#log.info(this.#stoppedMessage, { ms });
      if (failure !== undefined) throw failure;
    })());
  }
}
