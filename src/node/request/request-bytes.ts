/**
 * The protobuf size of a KV request, for etcd's request-size limit (--max-request-bytes). etcd measures the
 * marshalled InternalRaftRequest, which adds a header of about 15 bytes; we measure the request itself, as a
 * client encodes it (canonical proto3: zero fields left out, a oneof member written when it is not zero), so
 * a gRPC request and the same request from the embedded client get the same answer.
 */
import { CompareTarget } from '../../mvcc/types.js';
import type { Compare, DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from '../../mvcc/types.js';

/** Bytes of a varint; int64 fields carry negatives as 10 bytes. */
function varintBytes(n: number | bigint): number {
  if (n < 0) return 10;
  let bytes = 1;
  if (typeof n === 'bigint') {
    for (let v = n; v >= 0x80n; v >>= 7n) bytes++;
  } else {
    for (let v = n; v >= 0x80; v = Math.floor(v / 0x80)) bytes++;
  }
  return bytes;
}

/** A field key: field number and wire type in one varint. */
const tagBytes = (field: number): number => varintBytes(field << 3);

function bytesField(field: number, b: Uint8Array | undefined): number {
  if (b === undefined || b.length === 0) return 0;
  return tagBytes(field) + varintBytes(b.length) + b.length;
}

function intField(field: number, n: number | bigint | undefined): number {
  if (n === undefined || n === 0 || n === 0n) return 0;
  return tagBytes(field) + varintBytes(n);
}

const boolField = (field: number, b: boolean): number => (b ? tagBytes(field) + 1 : 0);

/** An embedded message: written even when empty (RequestOp members, repeated elements). */
const messageField = (field: number, bytes: number): number => tagBytes(field) + varintBytes(bytes) + bytes;

export function rangeRequestBytes(r: RangeRequest): number {
  return (
    bytesField(1, r.key) + bytesField(2, r.rangeEnd) + intField(3, r.limit) + intField(4, r.revision) +
    intField(5, r.sortOrder) + intField(6, r.sortTarget) + boolField(7, r.serializable) + boolField(8, r.keysOnly) +
    boolField(9, r.countOnly) + intField(10, r.minModRevision) + intField(11, r.maxModRevision) +
    intField(12, r.minCreateRevision) + intField(13, r.maxCreateRevision)
  );
}

export function putRequestBytes(p: PutRequest): number {
  return (
    bytesField(1, p.key) + bytesField(2, p.value) + intField(3, p.lease) + boolField(4, p.prevKv) +
    boolField(5, p.ignoreValue) + boolField(6, p.ignoreLease)
  );
}

export function deleteRangeRequestBytes(d: DeleteRangeRequest): number {
  return bytesField(1, d.key) + bytesField(2, d.rangeEnd) + boolField(3, d.prevKv);
}

function compareBytes(c: Compare): number {
  const operand =
    c.target === CompareTarget.Version ? intField(4, c.version)
    : c.target === CompareTarget.Create ? intField(5, c.createRevision)
    : c.target === CompareTarget.Mod ? intField(6, c.modRevision)
    : c.target === CompareTarget.Value ? bytesField(7, c.value)
    : intField(8, c.lease);
  return intField(1, c.result) + intField(2, c.target) + bytesField(3, c.key) + operand + bytesField(64, c.rangeEnd);
}

function requestOpBytes(op: RequestOp): number {
  if ('range' in op) return messageField(1, rangeRequestBytes(op.range));
  if ('put' in op) return messageField(2, putRequestBytes(op.put));
  if ('deleteRange' in op) return messageField(3, deleteRangeRequestBytes(op.deleteRange));
  return messageField(4, txnRequestBytes(op.txn));
}

export function txnRequestBytes(t: TxnRequest): number {
  let n = 0;
  for (const c of t.compare) n += messageField(1, compareBytes(c));
  for (const op of t.success) n += messageField(2, requestOpBytes(op));
  for (const op of t.failure) n += messageField(3, requestOpBytes(op));
  return n;
}
