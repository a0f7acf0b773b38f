/**
 * Wire ↔ domain conversion for the etcd messages. Decoded requests are protobufjs instances (int64 as Long,
 * bytes as Buffer); encoded responses are plain objects in protobufjs' camelCase field names.
 *
 * Numbers: revisions, counts, TTLs, terms and indexes are JS numbers (asserted safe on the way out; clamped
 * on the way in, where a value past 2^53 is meaningless anyway); member, cluster and lease ids are bigint.
 * Zero and empty fields are left out of responses, as etcd's gogoproto encoder does, which also saves bytes.
 */
import { assertSafeInteger } from '../../base/assert.js';
import type {
  Compare,
  DeleteRangeRequest,
  DeleteRangeResponse,
  Event,
  KeyValue,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  RequestOp,
  ResponseOp,
  TxnRequest,
  TxnResponse,
} from '../../mvcc/types.js';
import type { Member, ResponseHeader } from '../../node/server-api.js';
import { EtcdError } from '../../node/errors.js';
import type { Wire } from './proto.js';

interface LongLike {
  low: number;
  high: number;
  unsigned?: boolean;
}

const two32 = 4294967296;

/** int64/uint64 from the wire → number; values beyond 2^53 saturate (only ever compared, never stored). */
export function num(v: LongLike | number | null | undefined): number {
  if (v == null) return 0;
  if (typeof v === 'number') return v;
  if (v.high === 0 || (v.high === -1 && !v.unsigned && v.low < 0)) {
    return v.unsigned || v.high === 0 ? v.low >>> 0 : v.low;
  }
  const n = (v.unsigned ? v.high >>> 0 : v.high) * two32 + (v.low >>> 0);
  if (n > Number.MAX_SAFE_INTEGER) return Number.MAX_SAFE_INTEGER;
  if (n < Number.MIN_SAFE_INTEGER) return Number.MIN_SAFE_INTEGER;
  return n;
}

/** int64 (signed: lease ids) or uint64 (member/cluster ids) from the wire → bigint, exactly. */
export function id(v: LongLike | number | null | undefined, signed: boolean): bigint {
  if (v == null) return 0n;
  const bits = typeof v === 'number' ? BigInt(v) : (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
  return signed ? BigInt.asIntN(64, bits) : BigInt.asUintN(64, bits);
}

/** bigint → the {low, high} pair protobufjs writes for int64/uint64; undefined for 0 (field omitted). */
export function long(v: bigint): LongLike | undefined {
  if (v === 0n) return undefined;
  return { low: Number(BigInt.asUintN(32, v)) | 0, high: Number(BigInt.asUintN(32, v >> 32n)) | 0 };
}

/** A safe non-negative integer for the wire, or undefined when 0. */
export function n64(v: number, what: string): number | undefined {
  if (v === 0) return undefined;
  assertSafeInteger(v, what);
  return v;
}

/** A possibly negative integer (TTL -1, watch id -1) for the wire. */
export function i64(v: number): number | undefined {
  return v === 0 ? undefined : v;
}

function bytesOrUndef(b: Uint8Array): Uint8Array | undefined {
  return b.length === 0 ? undefined : b;
}

/** A private copy: decoded bytes are views into the whole gRPC frame, which a stored key must not pin. */
function own(b: Uint8Array): Uint8Array {
  return b.length === 0 ? new Uint8Array(0) : Uint8Array.prototype.slice.call(b);
}

// ---- responses ----

export function encodeHeader(h: ResponseHeader): Wire {
  return {
    clusterId: long(h.clusterId),
    memberId: long(h.memberId),
    revision: n64(h.revision, 'header.revision'),
    raftTerm: n64(h.raftTerm, 'header.raftTerm'),
  };
}

export function encodeKeyValue(kv: KeyValue): Wire {
  return {
    key: kv.key,
    createRevision: n64(kv.createRevision, 'createRevision'),
    modRevision: n64(kv.modRevision, 'modRevision'),
    version: n64(kv.version, 'version'),
    value: bytesOrUndef(kv.value),
    lease: long(kv.lease),
  };
}

export function encodeEvent(e: Event): Wire {
  return {
    type: e.type === 0 ? undefined : e.type,
    kv: encodeKeyValue(e.kv),
    prevKv: e.prevKv ? encodeKeyValue(e.prevKv) : undefined,
  };
}

export function encodeRange(r: RangeResponse, header: Wire): Wire {
  return {
    header,
    kvs: r.kvs.length === 0 ? undefined : r.kvs.map(encodeKeyValue),
    more: r.more || undefined,
    count: n64(r.count, 'count'),
  };
}

export function encodePut(r: PutResponse, header: Wire): Wire {
  return { header, prevKv: r.prevKv ? encodeKeyValue(r.prevKv) : undefined };
}

export function encodeDeleteRange(r: DeleteRangeResponse, header: Wire): Wire {
  return {
    header,
    deleted: n64(r.deleted, 'deleted'),
    prevKvs: r.prevKvs.length === 0 ? undefined : r.prevKvs.map(encodeKeyValue),
  };
}

/** Sub-responses carry a header holding only their revision, exactly as etcd's applier fills them. */
function subHeader(revision: number): Wire {
  return { revision: n64(revision, 'revision') };
}

function encodeResponseOp(op: ResponseOp): Wire {
  if ('range' in op) return { responseRange: encodeRange(op.range, subHeader(op.range.revision)) };
  if ('put' in op) return { responsePut: encodePut(op.put, subHeader(op.put.revision)) };
  if ('deleteRange' in op) {
    return { responseDeleteRange: encodeDeleteRange(op.deleteRange, subHeader(op.deleteRange.revision)) };
  }
  return { responseTxn: encodeTxn(op.txn, subHeader(op.txn.revision)) };
}

export function encodeTxn(r: TxnResponse, header: Wire): Wire {
  return {
    header,
    succeeded: r.succeeded || undefined,
    responses: r.responses.length === 0 ? undefined : r.responses.map(encodeResponseOp),
  };
}

export function encodeMember(m: Member): Wire {
  return {
    ID: long(m.id),
    name: m.name || undefined,
    peerURLs: m.peerUrls,
    clientURLs: m.clientUrls,
    isLearner: m.isLearner || undefined,
  };
}

// ---- requests ----

/** Negative limits and revisions mean "none" / "current" in etcd (apply.go, kvstore_txn.go). */
function nonNegative(v: LongLike | number): number {
  const n = num(v);
  return n < 0 ? 0 : n;
}

export function decodeRange(m: Wire): RangeRequest {
  return {
    key: m.key,
    rangeEnd: m.rangeEnd,
    limit: nonNegative(m.limit),
    revision: nonNegative(m.revision),
    sortOrder: m.sortOrder,
    sortTarget: m.sortTarget,
    serializable: m.serializable,
    keysOnly: m.keysOnly,
    countOnly: m.countOnly,
    minModRevision: nonNegative(m.minModRevision),
    maxModRevision: nonNegative(m.maxModRevision),
    minCreateRevision: nonNegative(m.minCreateRevision),
    maxCreateRevision: nonNegative(m.maxCreateRevision),
  };
}

export function decodePut(m: Wire): PutRequest {
  return {
    key: own(m.key),
    value: own(m.value),
    lease: id(m.lease, true),
    prevKv: m.prevKv,
    ignoreValue: m.ignoreValue,
    ignoreLease: m.ignoreLease,
  };
}

export function decodeDeleteRange(m: Wire): DeleteRangeRequest {
  return { key: m.key, rangeEnd: m.rangeEnd, prevKv: m.prevKv };
}

function decodeCompare(m: Wire): Compare {
  // Every operand is read (defaults when unset): etcd compares against a zero operand when the union is empty.
  return {
    result: m.result,
    target: m.target,
    key: m.key,
    rangeEnd: m.rangeEnd,
    version: num(m.version),
    createRevision: num(m.createRevision),
    modRevision: num(m.modRevision),
    value: m.value,
    lease: id(m.lease, true),
  };
}

/**
 * An op with no request set is refused here, with etcd's answer (checkRequestOp: key not found), as no domain
 * request can express it; every other check is the validator's (src/node/request/validate.ts). etcd checks ops in
 * in order, so a txn holding an empty op gets this error even where etcd would first report another one.
 */
export function decodeRequestOp(m: Wire): RequestOp {
  switch (m.request as string | undefined) {
    case 'requestRange':
      return { range: decodeRange(m.requestRange) };
    case 'requestPut':
      return { put: decodePut(m.requestPut) };
    case 'requestDeleteRange':
      return { deleteRange: decodeDeleteRange(m.requestDeleteRange) };
    case 'requestTxn':
      return { txn: decodeTxn(m.requestTxn) };
    default:
      throw new EtcdError('keyNotFound');
  }
}

export function decodeTxn(m: Wire): TxnRequest {
  return {
    compare: (m.compare as Wire[]).map(decodeCompare),
    success: (m.success as Wire[]).map(decodeRequestOp),
    failure: (m.failure as Wire[]).map(decodeRequestOp),
  };
}
