/**
 * A small seeded generator (xoshiro128**, seeded by splitmix32). Consensus and simulation take one of these
 * by injection; the deterministic core draws no randomness from anywhere else.
 */
export interface Rng {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
}

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Prng implements Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    const sm = splitmix32(seed);
    this.#a = sm();
    this.#b = sm();
    this.#c = sm();
    this.#d = sm();
  }

  #nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.#b, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.#b << 9) >>> 0;
    this.#c ^= this.#a;
    this.#d ^= this.#b;
    this.#b ^= this.#c;
    this.#a ^= this.#d;
    this.#c ^= t;
    this.#d = rotl(this.#d, 11);
    return result;
  }

  next(): number {
    return this.#nextU32() / 0x1_0000_0000;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** A child generator with an independent stream, so adding draws in one place does not shift another. */
  fork(): Prng {
    return new Prng(this.#nextU32());
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
