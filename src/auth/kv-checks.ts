/**
 * Permission checks on KV and lease requests (etcd's authApplierV3 and checkTxnAuth): run in apply for writes
 * (with the auth info and revision the proposer recorded) and at the request edge for reads. A read of the
 * previous value (prev_kv) needs read permission too; a lease's keys must all be writable to revoke it or to
 * attach another key to it (the user could not revoke it otherwise).
 */
import type { DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from '../mvcc/types.js';
import type { AuthStore } from './auth-store.js';
import type { AuthInfo } from './types.js';

const empty = new Uint8Array(0);

/** The keys attached to a lease (empty when it does not exist). */
export type LeaseKeys = (leaseId: bigint) => Iterable<Uint8Array>;

export function checkRange(store: AuthStore, ai: AuthInfo | undefined, req: Pick<RangeRequest, 'key' | 'rangeEnd'>): void {
  store.checkRead(ai, req.key, req.rangeEnd);
}

export function checkPut(store: AuthStore, ai: AuthInfo | undefined, req: PutRequest, leaseKeys: LeaseKeys): void {
  store.checkWrite(ai, req.key, empty);
  if (req.lease !== 0n) checkLeaseKeys(store, ai, req.lease, leaseKeys);
  if (req.prevKv) store.checkRead(ai, req.key, empty);
}

export function checkDeleteRange(store: AuthStore, ai: AuthInfo | undefined, req: DeleteRangeRequest): void {
  store.checkWrite(ai, req.key, req.rangeEnd);
  if (req.prevKv) store.checkRead(ai, req.key, req.rangeEnd);
}

/** Compares need read; every operation of both branches is checked, nested transactions included. */
export function checkTxn(store: AuthStore, ai: AuthInfo | undefined, txn: TxnRequest, leaseKeys: LeaseKeys): void {
  for (const c of txn.compare) store.checkRead(ai, c.key, c.rangeEnd);
  checkOps(store, ai, txn.success, leaseKeys);
  checkOps(store, ai, txn.failure, leaseKeys);
}

function checkOps(store: AuthStore, ai: AuthInfo | undefined, ops: RequestOp[], leaseKeys: LeaseKeys): void {
  for (const op of ops) {
    if ('range' in op) checkRange(store, ai, op.range);
    else if ('put' in op) checkPut(store, ai, op.put, leaseKeys);
    else if ('deleteRange' in op) checkDeleteRange(store, ai, op.deleteRange);
    else checkTxn(store, ai, op.txn, leaseKeys);
  }
}

export function checkLeaseKeys(store: AuthStore, ai: AuthInfo | undefined, leaseId: bigint, leaseKeys: LeaseKeys): void {
  if (!store.enabled) return;
  for (const key of leaseKeys(leaseId)) store.checkWrite(ai, key, empty);
}
