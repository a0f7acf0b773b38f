/**
 * Warnings that repeat while their cause lasts (a snapshot refused for want of room, tried again ten times a
 * second): the first of a kind is logged at once, then at most one per interval, carrying how many were not
 * logged since (`repeatsNotLogged`). A success of that kind (`clear`) ends the run, so the next failure is
 * logged at once. Keys are few (a kind per peer), so the map stays small.
 */
import type { LogFields, Logger } from './log.js';

interface Run {
  loggedAtMs: number;
  notLogged: number;
}

export class RepeatedWarnings {
  readonly #runs = new Map<string, Run>();
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #nowMs: () => number;

  constructor(logger: Logger, intervalMs: number, nowMs: () => number = () => performance.now()) {
    this.#logger = logger;
    this.#intervalMs = intervalMs;
    this.#nowMs = nowMs;
  }

  warn(key: string, msg: string, fields: LogFields): void {
    const now = this.#nowMs();
    const run = this.#runs.get(key);
    if (run !== undefined && now - run.loggedAtMs < this.#intervalMs) {
      run.notLogged++;
      return;
    }
    const notLogged = run?.notLogged ?? 0;
    this.#runs.set(key, { loggedAtMs: now, notLogged: 0 });
    this.#logger.warn(msg, notLogged > 0 ? { ...fields, repeatsNotLogged: notLogged } : fields);
  }

  /** The kind succeeded: its next failure is news again. */
  clear(key: string): void {
    this.#runs.delete(key);
  }
}
