/**
 * The one txn classifier: what a txn may write, over both branches and every nested txn (which branch runs
 * is known only at apply). The pipeline serves a txn that writes nothing as a read (no Raft, no quota: etcd's
 * isTxnReadonly); apply refuses a txn that may put while NOSPACE is raised, and lets deletes through (etcd's
 * applierV3Capped).
 *
 * Worked example: `if (v == 1) then put a else (if (...) then delete b)` → { puts: true, deletes: true };
 * `then range a else range b` → { puts: false, deletes: false }, a read.
 */
import type { RequestOp, TxnRequest } from '../../mvcc/types.js';

export interface TxnWrites {
  readonly puts: boolean;
  readonly deletes: boolean;
}

export function txnWrites(txn: TxnRequest): TxnWrites {
  let puts = false;
  let deletes = false;
  const visit = (ops: RequestOp[]): void => {
    for (const op of ops) {
      if ('put' in op) puts = true;
      else if ('deleteRange' in op) deletes = true;
      else if ('txn' in op) {
        visit(op.txn.success);
        visit(op.txn.failure);
      }
    }
  };
  visit(txn.success);
  visit(txn.failure);
  return { puts, deletes };
}

/** etcd serves a txn without writes as a read: no Raft, no quota. */
export function isReadOnlyTxn(txn: TxnRequest): boolean {
  const w = txnWrites(txn);
  return !w.puts && !w.deletes;
}
