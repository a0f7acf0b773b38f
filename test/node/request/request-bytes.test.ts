/** B — the request-size limit measures a domain request exactly as protobuf would encode it on the wire. */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../../src/base/prng.js';
import { CompareTarget } from '../../../src/mvcc/types.js';
import type { Compare, DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from '../../../src/mvcc/types.js';
import { long } from '../../../src/api/grpc/messages.js';
import { messageType, type Wire } from '../../../src/api/grpc/proto.js';
import { deleteRangeRequestBytes, putRequestBytes, rangeRequestBytes, txnRequestBytes } from '../../../src/node/request/request-bytes.js';

/** A wire object as a proto3 client builds it: zero fields left out (protobufjs writes every field present). */
function wire(fields: Record<string, unknown>): Wire {
  const out: Wire = {};
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === 0 || v === 0n || v === false || (v instanceof Uint8Array && v.length === 0)) continue;
    out[k] = typeof v === 'bigint' ? long(v) : v;
  }
  return out;
}

const operandField = ['version', 'createRevision', 'modRevision', 'value', 'lease'] as const;

function compareWire(c: Compare): Wire {
  const { result, target, key, rangeEnd } = c;
  const operand = operandField[target];
  return wire({ result, target, key, rangeEnd, [operand]: c[operand] });
}

function opWire(op: RequestOp): Wire {
  if ('range' in op) return { requestRange: wire({ ...op.range }) };
  if ('put' in op) return { requestPut: wire({ ...op.put }) };
  if ('deleteRange' in op) return { requestDeleteRange: wire({ ...op.deleteRange }) };
  return { requestTxn: txnWire(op.txn) };
}

function txnWire(t: TxnRequest): Wire {
  return { compare: t.compare.map(compareWire), success: t.success.map(opWire), failure: t.failure.map(opWire) };
}

const encodedBytes = (type: string, w: Wire): number => messageType(`etcdserverpb.${type}`).encode(w).finish().length;

class Gen {
  constructor(readonly rng: Prng) {}
  bytes(max: number): Uint8Array {
    const out = new Uint8Array(this.rng.int(max + 1));
    for (let i = 0; i < out.length; i++) out[i] = this.rng.int(256);
    return out;
  }
  /** Zero half of the time, else any size of varint, up to 2^53. */
  num(): number {
    return this.rng.int(2) === 0 ? 0 : Math.floor(2 ** (this.rng.int(53) + 1) * this.rng.next()) + 1;
  }
  lease(): bigint {
    const r = this.rng.int(4);
    return r === 0 ? 0n : r === 1 ? -BigInt(this.num() + 1) : BigInt(this.num()) * BigInt(this.rng.int(1 << 11) + 1);
  }
  flag(): boolean {
    return this.rng.int(2) === 0;
  }
  range(): RangeRequest {
    return {
      key: this.bytes(20), rangeEnd: this.bytes(3), limit: this.num(), revision: this.num(),
      sortOrder: this.rng.int(3) as RangeRequest['sortOrder'], sortTarget: this.rng.int(5) as RangeRequest['sortTarget'],
      serializable: this.flag(), keysOnly: this.flag(), countOnly: this.flag(), minModRevision: this.num(),
      maxModRevision: this.num(), minCreateRevision: this.num(), maxCreateRevision: this.num(),
    };
  }
  put(): PutRequest {
    return { key: this.bytes(20), value: this.bytes(300), lease: this.lease(), prevKv: this.flag(), ignoreValue: this.flag(), ignoreLease: this.flag() };
  }
  deleteRange(): DeleteRangeRequest {
    return { key: this.bytes(20), rangeEnd: this.bytes(3), prevKv: this.flag() };
  }
  compare(): Compare {
    const target = this.rng.int(5) as Compare['target'];
    const c: Compare = { result: this.rng.int(4) as Compare['result'], target, key: this.bytes(10), rangeEnd: this.bytes(2) };
    if (target === CompareTarget.Version) c.version = this.num();
    else if (target === CompareTarget.Create) c.createRevision = this.num();
    else if (target === CompareTarget.Mod) c.modRevision = this.num();
    else if (target === CompareTarget.Value) c.value = this.bytes(200);
    else c.lease = this.lease();
    return c;
  }
  op(depth: number): RequestOp {
    const r = this.rng.int(depth > 0 ? 4 : 3);
    return r === 0 ? { range: this.range() } : r === 1 ? { put: this.put() } : r === 2 ? { deleteRange: this.deleteRange() } : { txn: this.txn(depth - 1) };
  }
  txn(depth: number): TxnRequest {
    const list = <T>(f: () => T): T[] => Array.from({ length: this.rng.int(4) }, f);
    return { compare: list(() => this.compare()), success: list(() => this.op(depth)), failure: list(() => this.op(depth)) };
  }
}

describe('request bytes', () => {
  it('equal the protobuf encoding of random ranges, puts, deletes and nested txns', () => {
    const seed = 0x14;
    const g = new Gen(new Prng(seed));
    for (let i = 0; i < 300; i++) {
      const where = `seed ${seed} i ${i}`;
      const range = g.range();
      expect(rangeRequestBytes(range), `${where} range`).toBe(encodedBytes('RangeRequest', wire({ ...range })));
      const put = g.put();
      expect(putRequestBytes(put), `${where} put`).toBe(encodedBytes('PutRequest', wire({ ...put })));
      const del = g.deleteRange();
      expect(deleteRangeRequestBytes(del), `${where} delete`).toBe(encodedBytes('DeleteRangeRequest', wire({ ...del })));
      const txn = g.txn(2);
      expect(txnRequestBytes(txn), `${where} txn`).toBe(encodedBytes('TxnRequest', txnWire(txn)));
    }
  });

  it('count a large value with its multi-byte length prefix', () => {
    const put: PutRequest = { key: new Uint8Array(1), value: new Uint8Array(1.5 * 1024 * 1024), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false };
    expect(putRequestBytes(put)).toBe(2 + 1 + 4 + 1.5 * 1024 * 1024);
  });
});
