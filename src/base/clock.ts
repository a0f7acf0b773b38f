/**
 * Time as a port. The deterministic core never reads time; the driver loop does, through this interface, so
 * tests and the simulator can use a manual clock.
 */
export interface Clock {
  /** Monotonic milliseconds (never wall time: leases must survive clock jumps). */
  nowMs(): number;
}

export class ManualClock implements Clock {
  #nowMs = 0;
  nowMs(): number {
    return this.#nowMs;
  }
  advance(ms: number): void {
    this.#nowMs += ms;
  }
}
