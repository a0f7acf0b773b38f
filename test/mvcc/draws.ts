/** The draws every seeded request generator makes from its Prng (test/mvcc/gen.ts, test/e2e/differential/gen.ts). */
import type { Prng } from '../../src/base/prng.js';

export class Draws {
  constructor(readonly rng: Prng) {}
  int(n: number): number {
    return this.rng.int(n);
  }
  chance(p: number): boolean {
    return this.rng.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
}
