/**
 * A plain Put's entry written directly (issue 34) is byte for byte what msgpackr's pack writes, so the
 * decoder (and a member on an older build) reads it unchanged; anything not a plain put is left to pack.
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../../src/base/prng.js';
import type { PutRequest } from '../../../src/mvcc/types.js';
import { pack } from '../../../src/storage/entry-codec.js';
import { decodeRequest, encodeRequest, type RaftEnvelope, type RaftRequest } from '../../../src/node/driver/raft-request.js';
import { encodePutEntry } from '../../../src/node/driver/put-entry.js';

const putOf = (key: Uint8Array, value: Uint8Array, lease = 0n, flags: [boolean, boolean, boolean] = [false, false, false]): PutRequest => ({
  key, value, lease, prevKv: flags[0], ignoreValue: flags[1], ignoreLease: flags[2],
});
const envOf = (id: bigint, put: PutRequest): RaftEnvelope => ({ id, req: { kind: 'put', put } });
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('a plain put entry', () => {
  it('is the worked example of put-entry.ts', () => {
    const bytes = encodePutEntry(envOf(0x1234n, putOf(Buffer.from('ab'), new Uint8Array([1, 2, 3]), 0n, [false, true, false])))!;
    expect(hex(bytes)).toBe(
      'de0002a26964d30000000000001234a3726571de0002a46b696e64a3707574a3707574de0006a36b6579c4026162a576616c7565c403010203' +
      'a56c65617365d30000000000000000a6707265764b76c2ab69676e6f726556616c7565c3ab69676e6f72654c65617365c2',
    );
  });

  it.each([
    { what: 'empty key and value', key: 0, value: 0, lease: 0n },
    { what: 'a 255-byte value (bin8)', key: 3, value: 255, lease: 1n },
    { what: 'a 256-byte value (bin16)', key: 3, value: 256, lease: 0x7fff_ffff_ffff_ffffn },
    { what: 'a 65,535-byte value (bin16)', key: 255, value: 65_535, lease: 42n },
    { what: 'a 65,536-byte value and a 256-byte key (bin32)', key: 256, value: 65_536, lease: -1n },
    { what: 'a 1.5 MiB value', key: 10, value: 1_572_864, lease: -(1n << 63n) },
  ])('writes the bytes pack writes: $what', ({ key, value, lease }) => {
    const env = envOf(0x7abc_0000_0000_0001n, putOf(Buffer.alloc(key, 0x6b), new Uint8Array(value).fill(0x76), lease, [true, false, true]));
    const bytes = encodePutEntry(env)!;
    expect(hex(bytes)).toBe(hex(pack(env)));
    expect(decodeRequest(bytes)).toEqual(decodeRequest(pack(env)));
  });

  it('writes the bytes pack writes for random puts (seeded)', () => {
    const seed = 3406;
    const rng = new Prng(seed);
    for (let i = 0; i < 500; i++) {
      const len = (): number => [0, 1, 31, 32, 255, 256, 1000, 65_535, 65_536][rng.int(9)]!;
      const bytes = (n: number): Uint8Array => {
        const b = rng.int(2) === 0 ? Buffer.alloc(n) : new Uint8Array(n);
        for (let j = 0; j < n; j++) b[j] = rng.int(256);
        return b;
      };
      const lease = BigInt.asIntN(64, (BigInt(rng.int(0x1_0000_0000)) << 32n) | BigInt(rng.int(0x1_0000_0000)));
      const id = BigInt(rng.int(0x8000_0000)) << 32n | BigInt(rng.int(0x1_0000_0000));
      const env = envOf(id, putOf(bytes(len()), bytes(len()), lease, [rng.int(2) === 0, rng.int(2) === 0, rng.int(2) === 0]));
      expect(hex(encodeRequest(env)), `seed ${seed}, case ${i}`).toBe(hex(pack(env)));
    }
  });

  it('keeps the key order it is given, as pack does', () => {
    const put = { value: Buffer.from('v'), ignoreLease: false, key: Buffer.from('k'), lease: 7n, prevKv: true, ignoreValue: false };
    const env: RaftEnvelope = { id: 9n, req: { put, kind: 'put' } as RaftRequest };
    expect(hex(encodePutEntry(env)!)).toBe(hex(pack(env)));
  });

  it.each([
    { what: 'an auth stamp', env: { id: 1n, req: { kind: 'put', put: putOf(Buffer.from('k'), Buffer.from('v')), auth: { username: 'u', revision: 3 } } } },
    { what: 'a field it does not know', env: { id: 1n, req: { kind: 'put', put: { ...putOf(Buffer.from('k'), Buffer.from('v')), extra: 1 } } } },
    { what: 'a lease that is a number', env: { id: 1n, req: { kind: 'put', put: { ...putOf(Buffer.from('k'), Buffer.from('v')), lease: 5 } } } },
    { what: 'an undefined flag', env: { id: 1n, req: { kind: 'put', put: { ...putOf(Buffer.from('k'), Buffer.from('v')), prevKv: undefined } } } },
    { what: 'a lease past int64', env: { id: 1n, req: { kind: 'put', put: putOf(Buffer.from('k'), Buffer.from('v'), 1n << 63n) } } },
    { what: 'another kind', env: { id: 1n, req: { kind: 'deleteRange', deleteRange: { key: Buffer.from('k'), rangeEnd: new Uint8Array(0), prevKv: false } } } },
  ])('leaves $what to pack, which encodeRequest then uses', ({ env }) => {
    const e = env as unknown as RaftEnvelope;
    expect(encodePutEntry(e)).toBeUndefined();
    expect(hex(encodeRequest(e))).toBe(hex(pack(e)));
    expect(decodeRequest(encodeRequest(e))).toEqual(decodeRequest(pack(e)));
  });
});
