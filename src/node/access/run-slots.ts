/** At most `max` runs at once and `queuedMax` waiting for a turn; past that, etcd's "too many requests". */
import { EtcdError } from '../errors.js';

export class RunSlots {
  readonly #max: number;
  readonly #queuedMax: number;
  readonly #waiting: Array<() => void> = [];
  #running = 0;

  constructor(max: number, queuedMax: number) {
    this.#max = max;
    this.#queuedMax = queuedMax;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.#turn();
    try {
      return await fn();
    } finally {
      this.#release();
    }
  }

  async #turn(): Promise<void> {
    if (this.#running < this.#max) {
      this.#running++;
      return;
    }
    if (this.#waiting.length >= this.#queuedMax) throw new EtcdError('tooManyRequests');
    // #release hands its slot over directly: #running stays counted.
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next !== undefined) next();
    else this.#running--;
  }
}
