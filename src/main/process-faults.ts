/**
 * The last line: an error nothing caught (an uncaught exception, a promise rejection nobody observed). Every
 * promise of a member is awaited or routed to its fatal path and every socket has an 'error' listener, so
 * what reaches here is a bug; Node's default would end the process on the spot, with the log and the store
 * left as they were, no leadership handed over and nothing said in the member's log. Instead the cause is
 * logged, the member's stop sequence (member-stop.ts) runs, bounded by stopOnFaultMs, and the process exits 1.
 * A fault before the member runs (nothing to stop yet) exits at once; a fault while stopping (after a signal,
 * or a second fault) is logged and the stop under way finishes, within the same bound.
 */
import type { Logger } from '../config/log.js';

/**
 * How long the stop after a fault may take before the process exits regardless: above a graceful stop's own
 * bounds (a leader's hand-over takes up to two election timeouts, the client port closes after 500 ms) and
 * below a service manager's stop timeout (systemd: 90 s).
 */
export const stopOnFaultMs = 10_000;

/** The part of `process` this needs (tests pass an EventEmitter). */
export interface FaultSource {
  on(event: 'uncaughtException', listener: (error: Error) => void): unknown;
  on(event: 'unhandledRejection', listener: (reason: unknown) => void): unknown;
}

export interface ProcessFaultsOptions {
  logger: Logger;
  exit(code: number): void;
  stopBoundMs?: number;
}

export class ProcessFaults {
  readonly #o: ProcessFaultsOptions;
  #stop: (() => Promise<void>) | undefined;
  #faulted = false;
  #exited = false;

  constructor(options: ProcessFaultsOptions) {
    this.#o = options;
  }

  install(source: FaultSource): void {
    source.on('uncaughtException', (error) => this.fault('uncaught exception', error));
    source.on('unhandledRejection', (reason) => this.fault('unhandled promise rejection', reason));
  }

  /** The member runs: from now on a fault runs its stop sequence (`stop` is idempotent, as MemberStop.run is). */
  stopWith(stop: () => Promise<void>): void {
    this.#stop = stop;
  }

  fault(kind: string, error: unknown): void {
    const cause = error instanceof Error ? { error: error.message, stack: error.stack } : { error: String(error) };
    this.#o.logger.error(`${kind}: a bug escaped every handler; stopping`, cause);
    if (this.#faulted) return;
    this.#faulted = true;
    const stop = this.#stop;
    if (stop === undefined) return this.#exit();
    const boundMs = this.#o.stopBoundMs ?? stopOnFaultMs;
    const timer = setTimeout(() => {
      this.#o.logger.error('the stop after an uncaught error did not finish in time; exiting', { ms: boundMs });
      this.#exit();
    }, boundMs);
    void stop()
      .catch(() => {}) // a failing stage was logged by the stop sequence itself
      .finally(() => {
        clearTimeout(timer);
        this.#exit();
      });
  }

  #exit(): void {
    if (this.#exited) return;
    this.#exited = true;
    this.#o.exit(1);
  }
}
