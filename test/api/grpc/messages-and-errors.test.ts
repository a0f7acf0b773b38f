/** Pure pieces: int64 conversions, the error table and its mappings, snapshot padding, URL checks, fragments. */
import { status as Status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { AssertionError } from '../../../src/base/assert.js';
import { Prng } from '../../../src/base/prng.js';
import { MvccError, type MvccErrorCode } from '../../../src/mvcc/types.js';
import type { ProposeError } from '../../../src/raft/types.js';
import { EtcdError, etcdErrorCodeOf, etcdErrors, fromMvccError, fromProposeError } from '../../../src/node/errors.js';
import { grpcCode, toGrpcError } from '../../../src/api/grpc/grpc-error.js';
import { validPeerUrls } from '../../../src/api/grpc/cluster-service.js';
import { decodePut, encodeKeyValue, id, long, num } from '../../../src/api/grpc/messages.js';
import { snapshotPaddingBytes } from '../../../src/api/grpc/maintenance-service.js';
import { messageType } from '../../../src/api/grpc/proto.js';

describe('int64 conversion', () => {
  it('round-trips ids through the wire exactly, signed and unsigned', () => {
    const seed = 0x5eed;
    const rng = new Prng(seed);
    const kv = messageType('mvccpb.KeyValue');
    const member = messageType('etcdserverpb.Member');
    for (let i = 0; i < 500; i++) {
      const hi = BigInt(rng.int(2 ** 31)) * 2n ** 33n;
      const lease = BigInt.asIntN(64, hi + BigInt(rng.int(2 ** 31)) * (i % 2 === 0 ? 1n : -1n));
      const memberId = BigInt.asUintN(64, hi * 2n + BigInt(rng.int(2 ** 31)));
      const kvBack = kv.decode(kv.encode({ key: Buffer.from('k'), lease: long(lease) }).finish()) as unknown as { lease: never };
      const mBack = member.decode(member.encode({ ID: long(memberId) }).finish()) as unknown as { ID: never };
      expect(id(kvBack.lease, true), `seed ${seed} i ${i}`).toBe(lease);
      expect(id(mBack.ID, false), `seed ${seed} i ${i}`).toBe(memberId);
    }
  });

  it('reads revisions as numbers, saturating past 2^53 and keeping negatives', () => {
    expect(num({ low: 5, high: 0 })).toBe(5);
    expect(num({ low: -1, high: -1 })).toBe(-1);
    expect(num({ low: 0, high: 1 })).toBe(2 ** 32);
    expect(num({ low: -1, high: 0x7fffffff })).toBe(Number.MAX_SAFE_INTEGER);
    expect(num({ low: 0, high: -0x80000000 })).toBe(Number.MIN_SAFE_INTEGER);
    expect(num({ low: -1, high: -1, unsigned: true })).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('asserts that outgoing revisions are safe integers', () => {
    const kv = { key: new Uint8Array([1]), value: new Uint8Array(0), lease: 0n, createRevision: 2 ** 60, modRevision: 1, version: 1 };
    expect(() => encodeKeyValue(kv)).toThrow(AssertionError);
  });

  it('copies put keys and values out of the received frame', () => {
    const frame = Buffer.from('xxkeyvalue');
    const req = decodePut({ key: frame.subarray(2, 5), value: frame.subarray(5), lease: 0, prevKv: false, ignoreValue: false, ignoreLease: false });
    frame.fill(0);
    expect(Buffer.from(req.key).toString()).toBe('key');
    expect(Buffer.from(req.value).toString()).toBe('value');
  });
});

describe('error table', () => {
  it('holds distinct, etcd-prefixed messages with gRPC codes', () => {
    const messages = Object.values(etcdErrors).map((e) => e.message);
    expect(new Set(messages).size).toBe(messages.length);
    for (const [code, e] of Object.entries(etcdErrors)) {
      if (!['proposalDropped', 'watchDuplicateId', 'noPasswordUser'].includes(code)) expect(e.message).toMatch(/^etcdserver: /);
      expect(etcdErrorCodeOf(e.message)).toBe(code);
    }
  });

  it('keeps the statuses clients branch on', () => {
    const want: [keyof typeof etcdErrors, Status][] = [
      ['compacted', Status.OUT_OF_RANGE],
      ['futureRev', Status.OUT_OF_RANGE],
      ['leaseNotFound', Status.NOT_FOUND],
      ['noLeader', Status.UNAVAILABLE],
      ['tooManyRequests', Status.RESOURCE_EXHAUSTED],
      ['noSpace', Status.RESOURCE_EXHAUSTED],
      ['requestTooLarge', Status.INVALID_ARGUMENT],
      ['learnerNotReady', Status.FAILED_PRECONDITION],
      ['corrupt', Status.DATA_LOSS],
    ];
    for (const [code, status] of want) expect(grpcCode(new EtcdError(code).status), code).toBe(status);
  });

  it('maps every MvccError code and every ProposeError', () => {
    const mvcc: MvccErrorCode[] = ['compacted', 'futureRev', 'keyNotFound', 'leaseNotFound', 'leaseExists', 'leaseTtlTooLarge',
      'noSpace'];
    for (const code of mvcc) {
      const e = fromMvccError(new MvccError(code));
      expect(toGrpcError(new MvccError(code))).toEqual({ code: grpcCode(e.status), details: e.message });
    }
    expect(fromMvccError(new MvccError('leaseExists')).message).toBe('etcdserver: lease already exists');
    const propose: [ProposeError, string][] = [
      ['noLeader', 'etcdserver: no leader'],
      ['notLeader', 'etcdserver: not leader'],
      ['learnerNotCaughtUp', 'etcdserver: can only promote a learner member which is in sync with leader'],
      ['memberNotFound', 'etcdserver: member not found'],
      ['memberExists', 'etcdserver: member ID already exist'],
      ['notLearner', 'etcdserver: can only promote a learner member'],
      ['wouldLoseQuorum', 'etcdserver: re-configuration failed due to not enough started members'],
      ['proposalDropped', 'raft proposal dropped'],
    ];
    for (const [code, message] of propose) expect(fromProposeError(code).message).toBe(message);
  });

  it('never leaks a stack: unknown errors keep their first line, assertions become INTERNAL', () => {
    const err = new Error('disk on fire\n    at secret (/src/x.ts:1:1)');
    expect(toGrpcError(err)).toEqual({ code: Status.UNKNOWN, details: 'disk on fire' });
    expect(toGrpcError(new AssertionError('invariant x'))).toEqual({ code: Status.INTERNAL, details: 'etcetera: internal error' });
    expect(toGrpcError('plain')).toEqual({ code: Status.UNKNOWN, details: 'plain' });
  });
});

describe('snapshot padding and member URLs', () => {
  it('pads to a multiple of 512 so that size + sha256 ≡ 32 (mod 512)', () => {
    for (const size of [0, 1, 511, 512, 513, 100_000]) expect((size + snapshotPaddingBytes(size)) % 512).toBe(0);
    expect(snapshotPaddingBytes(1024)).toBe(0);
  });

  it('accepts URLs etcd accepts and refuses the rest', () => {
    expect(validPeerUrls(['http://10.0.0.1:2380', 'https://[::1]:2380'])).toBe(true);
    for (const bad of [[], ['10.0.0.1:2380'], ['http://10.0.0.1'], ['http://10.0.0.1:2380/path'], ['ftp://h:1']]) {
      expect(validPeerUrls(bad), bad.join()).toBe(false);
    }
  });
});
