import { describe, expect, it } from 'vitest';
import type { RequestOp, TxnRequest } from '../../../src/mvcc/types.js';
import { isReadOnlyTxn, txnWrites } from '../../../src/node/request/txn-writes.js';

const k = new TextEncoder().encode('k');
const range: RequestOp = { range: { key: k } as never };
const put: RequestOp = { put: { key: k, value: k } as never };
const del: RequestOp = { deleteRange: { key: k } as never };
const txn = (success: RequestOp[], failure: RequestOp[] = []): TxnRequest => ({ compare: [], success, failure });
const nested = (success: RequestOp[], failure: RequestOp[] = []): RequestOp => ({ txn: txn(success, failure) });

describe('txnWrites classifies a txn over both branches and nested txns', () => {
  it.each([
    ['an empty txn writes nothing', txn([]), { puts: false, deletes: false }, true],
    ['ranges only are a read', txn([range], [range]), { puts: false, deletes: false }, true],
    ['a put in the success branch', txn([range, put]), { puts: true, deletes: false }, false],
    ['a delete in the failure branch', txn([range], [del]), { puts: false, deletes: true }, false],
    ['a put inside a nested txn', txn([nested([range], [put])]), { puts: true, deletes: false }, false],
    ['a delete two levels down and a put', txn([put], [nested([nested([del])])]), { puts: true, deletes: true }, false],
    ['nested reads only are a read', txn([nested([range])], [nested([], [range])]), { puts: false, deletes: false }, true],
  ])('%s', (_name, t, writes, readOnly) => {
    expect(txnWrites(t)).toEqual(writes);
    expect(isReadOnlyTxn(t)).toBe(readOnly);
  });
});
