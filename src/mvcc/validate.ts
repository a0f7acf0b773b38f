/**
 * Request checks made BEFORE proposing, as etcd's api/v3rpc/key.go (checkRangeRequest, checkPutRequest,
 * checkDeleteRequest, checkTxnRequest, checkIntervals), in etcd's order so the first error reported is
 * etcd's. Sort enums are typed here, so etcd's invalid-sort-option check belongs to the wire decoder.
 */
import { compareBytes } from '../base/bytes.js';
import { txnOpsMax } from '../base/limits.js';
import { MvccError, type RequestOp, type TxnRequest } from './types.js';

function checkOp(op: RequestOp, opsMax: number): void {
  if ('range' in op) {
    if (op.range.key.length === 0) throw new MvccError('emptyKey');
  } else if ('put' in op) {
    const put = op.put;
    if (put.key.length === 0) throw new MvccError('emptyKey');
    if (put.ignoreValue && put.value.length !== 0) throw new MvccError('valueProvided');
    if (put.ignoreLease && put.lease !== 0n) throw new MvccError('leaseProvided');
  } else if ('deleteRange' in op) {
    if (op.deleteRange.key.length === 0) throw new MvccError('emptyKey');
  } else {
    checkTxn(op.txn, opsMax);
  }
}

function checkTxn(txn: TxnRequest, opsMax: number): void {
  const opc = Math.max(txn.compare.length, txn.success.length, txn.failure.length);
  if (opc > opsMax) throw new MvccError('tooManyOps');
  for (const c of txn.compare) if (c.key.length === 0) throw new MvccError('emptyKey');
  // etcd hands nested txns the budget left after this level's widest list.
  for (const op of txn.success) checkOp(op, opsMax - opc);
  for (const op of txn.failure) checkOp(op, opsMax - opc);
}

/** A delete interval as etcd's adt: [key, end) compared as strings; a single key is [key, key+"\0"). */
interface Interval {
  key: Uint8Array;
  end: Uint8Array | undefined;
}

function deletes(intervals: Interval[], k: Uint8Array): boolean {
  return intervals.some((iv) => (iv.end === undefined
    ? compareBytes(iv.key, k) === 0
    // etcd's affine interval: begin ≤ k < end. An end of "\0" is taken literally, so a from-key delete
    // never conflicts (etcd's quirk, kept for identical answers).
    : compareBytes(iv.key, k) <= 0 && compareBytes(k, iv.end) < 0));
}

function keyOf(k: Uint8Array): string {
  let out = '';
  for (const byte of k) out += String.fromCharCode(byte);
  return out;
}

/** etcd's checkIntervals: the puts of a level and the deletes in force there; throws duplicateKey. */
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
      if (puts.has(k) || deletes(dels, key)) throw new MvccError('duplicateKey');
      puts.set(k, key);
    }
    for (const [k, key] of otherwise.puts) {
      // then/else are exclusive: the same key in both is fine.
      if ((puts.has(k) && !then.puts.has(k)) || deletes(dels, key)) throw new MvccError('duplicateKey');
      puts.set(k, key);
    }
    dels.push(...then.dels, ...otherwise.dels);
  }
  for (const op of ops) {
    if (!('put' in op)) continue;
    const k = keyOf(op.put.key);
    if (puts.has(k) || deletes(dels, op.put.key)) throw new MvccError('duplicateKey');
    puts.set(k, op.put.key);
  }
  return { puts, dels };
}

/**
 * Validate a request before proposing it: emptyKey, valueProvided, leaseProvided, tooManyOps (more than
 * `opsMax` compares or ops in any list, nested budgets shrinking as etcd's), then duplicateKey.
 */
export function validateRequest(op: RequestOp, opsMax = txnOpsMax): void {
  checkOp(op, opsMax);
  if ('txn' in op) {
    checkIntervals(op.txn.success);
    checkIntervals(op.txn.failure);
  }
}
