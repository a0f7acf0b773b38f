/** Mutations of valid bytes, each drawn from the case's own seeded generator. */
import type { Prng } from '../../src/base/prng.js';

export function randomBytes(rng: Prng, n: number): Buffer {
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) out[i] = rng.int(256);
  return out;
}

export function pick<T>(rng: Prng, items: readonly T[]): T {
  return items[rng.int(items.length)]!;
}

const interesting32 = [0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff];

type Mutation = (rng: Prng, b: Buffer) => Buffer;

const mutations: Mutation[] = [
  // flip one bit
  (rng, b) => {
    if (b.length === 0) return b;
    const out = Buffer.from(b);
    const i = rng.int(out.length);
    out[i] = out[i]! ^ (1 << rng.int(8));
    return out;
  },
  // set one byte to something interesting
  (rng, b) => {
    if (b.length === 0) return b;
    const out = Buffer.from(b);
    out[rng.int(out.length)] = pick(rng, [0, 0x7f, 0x80, 0xff, 0x0a, 0x7b, 0x5b, 0x22]);
    return out;
  },
  // a 32-bit field overwritten (lengths, stream ids)
  (rng, b) => {
    if (b.length < 4) return b;
    const out = Buffer.from(b);
    out.writeUInt32BE(pick(rng, interesting32), rng.int(out.length - 3));
    return out;
  },
  // insert random bytes
  (rng, b) => {
    const at = rng.int(b.length + 1);
    return Buffer.concat([b.subarray(0, at), randomBytes(rng, 1 + rng.int(16)), b.subarray(at)]);
  },
  // delete a span
  (rng, b) => {
    if (b.length === 0) return b;
    const at = rng.int(b.length);
    return Buffer.concat([b.subarray(0, at), b.subarray(at + 1 + rng.int(16))]);
  },
  // duplicate a span
  (rng, b) => {
    if (b.length === 0) return b;
    const at = rng.int(b.length);
    const span = b.subarray(at, at + 1 + rng.int(64));
    return Buffer.concat([b.subarray(0, at), span, span, b.subarray(at)]);
  },
  // truncate
  (rng, b) => b.subarray(0, rng.int(b.length + 1)),
];

/** 1 to 4 mutations in a row. */
export function mutate(rng: Prng, b: Buffer): Buffer {
  let out = b;
  for (let n = 1 + rng.int(4); n > 0; n--) out = pick(rng, mutations)(rng, out);
  return out;
}
