/**
 * The snapshot stream codec (src/mvcc/snapshot.ts): records written straight into chunks, the checksum run
 * per chunk. Whatever the record sizes (empty, tiny, larger than a chunk, a chunk filled to its last byte
 * before finish) and however the receiver's reads cut the stream, decoding gives back every record, and
 * `check` agrees with `push`.
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { buckets } from '../../src/mvcc/backend.js';
import { Crc32c } from '../../src/mvcc/kv-codec.js';
import { StateStreamDecoder, StateStreamEncoder, stateStreamChunkBytes } from '../../src/mvcc/state-stream.js';

type Rec = { bucket: (typeof buckets)[number]; key: Uint8Array; value: Uint8Array };

function bytes(rng: Prng, n: number): Uint8Array {
  return Uint8Array.from({ length: n }, () => rng.int(256));
}

function encode(records: Rec[]): Uint8Array[] {
  const encoder = new StateStreamEncoder();
  const out: Uint8Array[] = [];
  for (const r of records) {
    const chunk = encoder.add(r.bucket, r.key, r.value);
    if (chunk !== undefined) out.push(chunk);
  }
  out.push(...encoder.finish());
  return out;
}

/** The stream re-cut into reads of random sizes (1 byte to 2 chunks). */
function recut(rng: Prng, chunks: Uint8Array[]): Uint8Array[] {
  const whole = Buffer.concat(chunks);
  const out: Uint8Array[] = [];
  for (let pos = 0; pos < whole.length;) {
    const n = 1 + rng.int(rng.int(4) === 0 ? 16 : 2 * stateStreamChunkBytes);
    out.push(whole.subarray(pos, pos + n));
    pos += n;
  }
  return out;
}

describe('snapshot stream', () => {
  it('continues CRC-32C across pieces (the check value of "123456789" is 0xe3069283)', () => {
    const text = new TextEncoder().encode('123456789');
    expect(new Crc32c().update(text).sum()).toBe(0xe3069283);
    expect(new Crc32c().update(text.subarray(0, 4)).update(new Uint8Array(0)).update(text.subarray(4)).sum()).toBe(0xe3069283);
  });

  for (const seed of [1, 2, 3, 4, 5]) {
    it(`round-trips records of every size, cut anywhere (seed ${seed})`, () => {
      const rng = new Prng(seed);
      const records: Rec[] = [];
      for (let i = 0; i < 300; i++) {
        const big = rng.int(50) === 0;
        const vlen = big ? stateStreamChunkBytes + rng.int(stateStreamChunkBytes) : rng.int(3) === 0 ? 0 : rng.int(5000);
        records.push({ bucket: buckets[rng.int(buckets.length)]!, key: bytes(rng, rng.int(40)), value: bytes(rng, vlen) });
      }
      const decoder = new StateStreamDecoder();
      const checker = new StateStreamDecoder();
      const got: Rec[] = [];
      for (const piece of recut(rng, encode(records))) {
        for (const op of decoder.push(piece)) if (op.type === 'put') got.push({ bucket: op.bucket, key: op.key, value: op.value });
        checker.check(piece);
      }
      decoder.end();
      checker.end();
      expect(got.length).toBe(records.length);
      for (let i = 0; i < records.length; i++) {
        expect(got[i]!.bucket, `record ${i} (seed ${seed})`).toBe(records[i]!.bucket);
        expect(Buffer.from(got[i]!.key).equals(Buffer.from(records[i]!.key)), `record ${i} key (seed ${seed})`).toBe(true);
        expect(Buffer.from(got[i]!.value).equals(Buffer.from(records[i]!.value)), `record ${i} value (seed ${seed})`).toBe(true);
      }
    });
  }

  it('finishes a chunk filled to its last byte with the marker and checksum in a chunk of their own', () => {
    // magic (8) + one record of 9 + value bytes = exactly one chunk.
    const value = new Uint8Array(stateStreamChunkBytes - 8 - 9);
    const chunks = encode([{ bucket: 'key', key: new Uint8Array(0), value }]);
    expect(chunks.map((c) => c.length)).toEqual([stateStreamChunkBytes, 5]);
    const decoder = new StateStreamDecoder();
    for (const c of chunks) decoder.push(c);
    expect(() => decoder.end()).not.toThrow();
  });

  it('hands out chunks the encoder never writes again', () => {
    const encoder = new StateStreamEncoder();
    const first: Uint8Array[] = [];
    for (let i = 0; i < 1000 && first.length === 0; i++) {
      const c = encoder.add('key', new Uint8Array([1]), new Uint8Array(1000).fill(7));
      if (c !== undefined) first.push(c);
    }
    const copy = Uint8Array.from(first[0]!);
    for (let i = 0; i < 1000; i++) encoder.add('key', new Uint8Array([2]), new Uint8Array(1000).fill(9));
    encoder.finish();
    expect(Buffer.from(first[0]!).equals(Buffer.from(copy))).toBe(true);
  });
});
