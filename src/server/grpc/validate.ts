/**
 * The checks etcd makes in its API layer before a request reaches the server (api/v3rpc/key.go:
 * checkRangeRequest, checkPutRequest, checkDeleteRequest, checkTxnRequest, checkIntervals), in etcd's order,
 * so a client sees the same error etcd would report first. Structure checks run on the decoded wire message
 * (so an empty RequestOp can be seen); the duplicate-key check runs on the domain request.
 */
import { compareBytes } from '../../base/bytes.js';
import { requestBytesMax } from '../../base/limits.js';
import type { RequestOp } from '../../mvcc/types.js';
import { EtcdError } from '../errors.js';
import type { Wire } from './proto.js';

const sortOrders = 3; // NONE, ASCEND, DESCEND
const sortTargets = 5; // KEY, VERSION, CREATE, MOD, VALUE

export function checkRange(m: Wire): void {
  if (m.key.length === 0) throw new EtcdError('emptyKey');
  // etcd 3.6 refuses unknown enum values; 3.5 silently ignored them.
  if (!(m.sortOrder >= 0 && m.sortOrder < sortOrders)) throw new EtcdError('invalidSortOption');
  if (!(m.sortTarget >= 0 && m.sortTarget < sortTargets)) throw new EtcdError('invalidSortOption');
}

export function checkPut(m: Wire): void {
  if (m.key.length === 0) throw new EtcdError('emptyKey');
  if (m.ignoreValue && m.value.length !== 0) throw new EtcdError('valueProvided');
  const lease = m.lease as { low: number; high: number } | number;
  const hasLease = typeof lease === 'number' ? lease !== 0 : lease.low !== 0 || lease.high !== 0;
  if (m.ignoreLease && hasLease) throw new EtcdError('leaseProvided');
}

export function checkDeleteRange(m: Wire): void {
  if (m.key.length === 0) throw new EtcdError('emptyKey');
}

/** etcd: the request as proposed must fit --max-request-bytes; we measure the wire request itself. */
export function checkSize(m: Wire): void {
  if ((m.$bytes ?? 0) > requestBytesMax) throw new EtcdError('requestTooLarge');
}

export function checkTxn(m: Wire, opsMax: number): void {
  const compare = m.compare as Wire[];
  const success = m.success as Wire[];
  const failure = m.failure as Wire[];
  const opc = Math.max(compare.length, success.length, failure.length);
  if (opc > opsMax) throw new EtcdError('tooManyOps');
  for (const c of compare) if (c.key.length === 0) throw new EtcdError('emptyKey');
  for (const op of success) checkRequestOp(op, opsMax - opc);
  for (const op of failure) checkRequestOp(op, opsMax - opc);
}

function checkRequestOp(op: Wire, opsMax: number): void {
  switch (op.request as string | undefined) {
    case 'requestRange':
      return checkRange(op.requestRange);
    case 'requestPut':
      return checkPut(op.requestPut);
    case 'requestDeleteRange':
      return checkDeleteRange(op.requestDeleteRange);
    case 'requestTxn':
      return checkTxn(op.requestTxn, opsMax);
    default:
      throw new EtcdError('keyNotFound');
  }
}

// ---- duplicate keys (checkIntervals) ----

/** A deleted interval [start, end); end null: unbounded (range_end "\0"). A point delete is [k, k+"\0"). */
interface Interval {
  start: Uint8Array;
  end: Uint8Array | null;
}

function pointEnd(key: Uint8Array): Uint8Array {
  const end = new Uint8Array(key.length + 1);
  end.set(key);
  return end;
}

function intersects(dels: Interval[], key: Uint8Array): boolean {
  for (const d of dels) {
    if (compareBytes(d.start, key) <= 0 && (d.end === null || compareBytes(key, d.end) < 0)) return true;
  }
  return false;
}

const keyId = (k: Uint8Array): string => Buffer.from(k.buffer, k.byteOffset, k.length).toString('latin1');

interface PutsAndDels {
  puts: Map<string, Uint8Array>;
  dels: Interval[];
}

/**
 * etcd's checkIntervals: within one branch, a key may be written once: no two puts of it, no put inside a
 * deleted range; nested txns' then/else branches may put the same key (only one runs). O(puts × deletes),
 * bounded by txnOpsMax.
 */
export function checkIntervals(ops: RequestOp[]): PutsAndDels {
  const dels: Interval[] = [];
  for (const op of ops) {
    if (!('deleteRange' in op)) continue;
    const { key, rangeEnd } = op.deleteRange;
    if (rangeEnd.length === 0) dels.push({ start: key, end: pointEnd(key) });
    else if (rangeEnd.length === 1 && rangeEnd[0] === 0) dels.push({ start: key, end: null });
    else dels.push({ start: key, end: rangeEnd });
  }
  const puts = new Map<string, Uint8Array>();
  const addPut = (k: string, key: Uint8Array): void => {
    if (puts.has(k) || intersects(dels, key)) throw new EtcdError('duplicateKey');
    puts.set(k, key);
  };
  for (const op of ops) {
    if (!('txn' in op)) continue;
    const then = checkIntervals(op.txn.success);
    const otherwise = checkIntervals(op.txn.failure);
    for (const [k, key] of then.puts) addPut(k, key);
    for (const [k, key] of otherwise.puts) {
      if (puts.has(k) && !then.puts.has(k)) throw new EtcdError('duplicateKey');
      if (intersects(dels, key)) throw new EtcdError('duplicateKey');
      puts.set(k, key);
    }
    dels.push(...then.dels, ...otherwise.dels);
  }
  for (const op of ops) {
    if ('put' in op) addPut(keyId(op.put.key), op.put.key);
  }
  return { puts, dels };
}
