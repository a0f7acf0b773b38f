/**
 * The one request validator, run at the EtcdApi boundary (EtcdServer), so gRPC, the embedded client and any
 * other front end get the same answers: etcd's api/v3rpc/key.go checks (checkRangeRequest, checkPutRequest,
 * checkDeleteRequest, checkTxnRequest, checkIntervals) in etcd's order, so the first error reported is etcd's,
 * then etcd's request-size limit (etcdserver: request is too large). Only one check stays with the gRPC
 * decoder: a RequestOp with no request set (etcd: key not found) cannot be expressed as a domain request.
 */
import { compareBytes } from '../../base/bytes.js';
import { requestBytesMax, txnOpsMax } from '../../base/limits.js';
import type { DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from '../../mvcc/types.js';
import { EtcdError } from '../errors.js';
import { deleteRangeRequestBytes, putRequestBytes, txnRequestBytes } from './request-bytes.js';

const sortOrders = 3; // NONE, ASCEND, DESCEND
const sortTargets = 5; // KEY, VERSION, CREATE, MOD, VALUE

/** `bytesMax`: etcd's --max-request-bytes. */
function checkSize(bytes: number, bytesMax: number): void {
  if (bytes > bytesMax) throw new EtcdError('requestTooLarge');
}

function rangeShape(r: RangeRequest): void {
  if (r.key.length === 0) throw new EtcdError('emptyKey');
  // etcd 3.6 refuses unknown enum values (only a wire client can send them); 3.5 silently ignored them.
  if (!(r.sortOrder >= 0 && r.sortOrder < sortOrders)) throw new EtcdError('invalidSortOption');
  if (!(r.sortTarget >= 0 && r.sortTarget < sortTargets)) throw new EtcdError('invalidSortOption');
}

function putShape(p: PutRequest): void {
  if (p.key.length === 0) throw new EtcdError('emptyKey');
  if (p.ignoreValue && p.value.length !== 0) throw new EtcdError('valueProvided');
  if (p.ignoreLease && p.lease !== 0n) throw new EtcdError('leaseProvided');
}

function deleteRangeShape(d: DeleteRangeRequest): void {
  if (d.key.length === 0) throw new EtcdError('emptyKey');
}

function txnShape(t: TxnRequest, opsMax: number): void {
  const opc = Math.max(t.compare.length, t.success.length, t.failure.length);
  if (opc > opsMax) throw new EtcdError('tooManyOps');
  for (const c of t.compare) if (c.key.length === 0) throw new EtcdError('emptyKey');
  // etcd hands nested txns the budget left after this level's widest list.
  for (const op of t.success) opShape(op, opsMax - opc);
  for (const op of t.failure) opShape(op, opsMax - opc);
}

function opShape(op: RequestOp, opsMax: number): void {
  if ('range' in op) rangeShape(op.range);
  else if ('put' in op) putShape(op.put);
  else if ('deleteRange' in op) deleteRangeShape(op.deleteRange);
  else txnShape(op.txn, opsMax);
}

export function checkRange(r: RangeRequest): void {
  rangeShape(r);
}

export function checkPut(p: PutRequest, bytesMax = requestBytesMax): void {
  putShape(p);
  checkSize(putRequestBytes(p), bytesMax);
}

export function checkDeleteRange(d: DeleteRangeRequest, bytesMax = requestBytesMax): void {
  deleteRangeShape(d);
  checkSize(deleteRangeRequestBytes(d), bytesMax);
}

/** `opsMax`: etcd's --max-txn-ops, compares or ops in any one list, nested budgets shrinking as etcd's. */
export function checkTxn(t: TxnRequest, opsMax = txnOpsMax, bytesMax = requestBytesMax): void {
  txnShape(t, opsMax);
  checkIntervals(t.success);
  checkIntervals(t.failure);
  checkSize(txnRequestBytes(t), bytesMax);
}

/** The same checks for a request given as a RequestOp (what a txn holds; tests drive the store with these). */
export function validateRequest(op: RequestOp, opsMax = txnOpsMax): void {
  if ('range' in op) checkRange(op.range);
  else if ('put' in op) checkPut(op.put);
  else if ('deleteRange' in op) checkDeleteRange(op.deleteRange);
  else checkTxn(op.txn, opsMax);
}

// ---- duplicate keys (etcd's checkIntervals) ----

/**
 * A delete interval as etcd's adt: [key, end) compared as strings; a single key is the point [key, key+"\0").
 * An end of "\0" is taken literally (etcd builds a string interval, not a from-key one), so a from-key
 * delete never conflicts: etcd's quirk, kept for identical answers.
 */
interface Interval {
  key: Uint8Array;
  end: Uint8Array | undefined;
}

function deletes(intervals: Interval[], k: Uint8Array): boolean {
  return intervals.some((iv) => (iv.end === undefined
    ? compareBytes(iv.key, k) === 0
    : compareBytes(iv.key, k) <= 0 && compareBytes(k, iv.end) < 0));
}

function keyOf(k: Uint8Array): string {
  let out = '';
  for (const byte of k) out += String.fromCharCode(byte);
  return out;
}

/**
 * Within one branch a key may be written once: no two puts of it, no put inside a deleted range; the
 * then/else branches of a nested txn may put the same key (only one runs). O(puts × deletes), bounded by
 * txnOpsMax. Returns the puts of this level and the deletes in force there.
 */
function checkIntervals(ops: RequestOp[]): { puts: Map<string, Uint8Array>; dels: Interval[] } {
  const dels: Interval[] = [];
  for (const op of ops) {
    if ('deleteRange' in op) dels.push({ key: op.deleteRange.key, end: op.deleteRange.rangeEnd.length > 0 ? op.deleteRange.rangeEnd : undefined });
  }
  const puts = new Map<string, Uint8Array>();
  for (const op of ops) {
    if (!('txn' in op)) continue;
    const then = checkIntervals(op.txn.success);
    const otherwise = checkIntervals(op.txn.failure);
    for (const [k, key] of then.puts) {
      if (puts.has(k) || deletes(dels, key)) throw new EtcdError('duplicateKey');
      puts.set(k, key);
    }
    for (const [k, key] of otherwise.puts) {
      if ((puts.has(k) && !then.puts.has(k)) || deletes(dels, key)) throw new EtcdError('duplicateKey');
      puts.set(k, key);
    }
    dels.push(...then.dels, ...otherwise.dels);
  }
  for (const op of ops) {
    if (!('put' in op)) continue;
    const k = keyOf(op.put.key);
    if (puts.has(k) || deletes(dels, op.put.key)) throw new EtcdError('duplicateKey');
    puts.set(k, op.put.key);
  }
  return { puts, dels };
}
