/** The hand-written encoders produce exactly protobufjs' bytes for the same response. */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../../src/base/prng.js';
import type { Event, KeyValue } from '../../../src/mvcc/types.js';
import type { EtcdApi, ResponseHeader, WatchOut } from '../../../src/node/server-api.js';
import { encodeHeader, encodeRange } from '../../../src/api/grpc/messages.js';
import { encodeRangeResponse, encodeWatchResponse } from '../../../src/api/grpc/fast-encode.js';
import { messageType } from '../../../src/api/grpc/proto.js';
import { watchResponseWire } from '../../../src/api/grpc/watch-service.js';

function randomKv(rng: Prng): KeyValue {
  const big = (): number => (rng.int(4) === 0 ? 0 : rng.int(3) === 0 ? rng.int(2 ** 21) * 2 ** 31 + rng.int(2 ** 31) : rng.int(300));
  const bytes = (max: number): Uint8Array => Uint8Array.from({ length: rng.int(max) }, () => rng.int(256));
  const leases = [0n, 1n, 0x694d_0000_0000_0001n, 2n ** 63n - 1n];
  return {
    key: bytes(rng.int(2) === 0 ? 10 : 300),
    value: bytes(rng.int(3) === 0 ? 20_000 : 50),
    createRevision: big(),
    modRevision: big(),
    version: big(),
    lease: leases[rng.int(leases.length)]!,
  };
}

function randomHeader(rng: Prng): ResponseHeader {
  return {
    clusterId: BigInt.asUintN(64, BigInt(rng.int(2 ** 31)) << BigInt(rng.int(33))),
    memberId: rng.int(2) === 0 ? 0n : 2n ** 64n - 1n,
    revision: rng.int(3) === 0 ? 0 : rng.int(2 ** 31) * 1000,
    raftTerm: rng.int(10),
  };
}

const seed = 20261129;

describe('fast encoders', () => {
  it('encode RangeResponse byte for byte like protobufjs', () => {
    const rng = new Prng(seed);
    const type = messageType('etcdserverpb.RangeResponse');
    for (let i = 0; i < 300; i++) {
      const kvs = Array.from({ length: rng.int(8) }, () => randomKv(rng));
      const r = { kvs, more: rng.int(2) === 0, count: rng.int(3) === 0 ? 0 : kvs.length + rng.int(2 ** 40), revision: 0 };
      const h = randomHeader(rng);
      const want = Buffer.from(type.encode(encodeRange(r, encodeHeader(h))).finish());
      expect(encodeRangeResponse(r, h).equals(want), `seed ${seed} case ${i}`).toBe(true);
    }
  });

  it('encode WatchResponse byte for byte like protobufjs', () => {
    const rng = new Prng(seed + 1);
    const type = messageType('etcdserverpb.WatchResponse');
    for (let i = 0; i < 300; i++) {
      const h = randomHeader(rng);
      const api = { header: () => h } as unknown as EtcdApi;
      const events: Event[] = Array.from({ length: rng.int(5) }, () => {
        const kv = randomKv(rng);
        return rng.int(2) === 0 ? { type: 0 as const, kv } : { type: 1 as const, kv, prevKv: randomKv(rng) };
      });
      const out: WatchOut = {
        watchId: [0, 1, -1, 7, 2 ** 40][rng.int(5)]!,
        created: rng.int(4) === 0,
        canceled: rng.int(4) === 0,
        compactRevision: rng.int(3) === 0 ? rng.int(10_000) : 0,
        cancelReason: rng.int(3) === 0 ? 'etcdserver: mvcc: required revision has been compacted' : '',
        fragment: rng.int(4) === 0,
        events,
        revision: h.revision,
      };
      const want = Buffer.from(type.encode(watchResponseWire(api, out)).finish());
      expect(encodeWatchResponse(out, h).equals(want), `seed ${seed + 1} case ${i}`).toBe(true);
    }
  });
});
