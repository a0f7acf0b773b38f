/** Requests etcd refuses in its API layer (api/v3rpc/key.go), with the error it reports first. */
import type { RequestOp } from '../../../src/mvcc/types.js';
import type { EtcdErrorCode } from '../../../src/node/errors.js';
import { b, delReq, putReq, rangeReq, txnReq } from '../../mvcc/helpers.js';

const put = (k: string, o = {}): RequestOp => ({ put: putReq(k, 'v', o) });
const del = (k: string, end = ''): RequestOp => ({ deleteRange: delReq(k, end) });
const txn = (success: RequestOp[], failure: RequestOp[] = []): RequestOp => ({ txn: txnReq({ success, failure }) });
const many = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));

export const validationCases: { name: string; op: RequestOp; error: EtcdErrorCode | null }[] = [
  { name: 'range with an empty key', op: { range: rangeReq('') }, error: 'emptyKey' },
  { name: 'put with an empty key', op: put(''), error: 'emptyKey' },
  { name: 'delete with an empty key', op: del(''), error: 'emptyKey' },
  { name: 'ignore_value with a value', op: { put: putReq('k', 'v', { ignoreValue: true }) }, error: 'valueProvided' },
  { name: 'ignore_lease with a lease', op: { put: putReq('k', '', { ignoreLease: true, lease: 5n }) }, error: 'leaseProvided' },
  { name: 'a txn of 128 puts', op: txn(many(128, (i) => put(`k${i}`))), error: null },
  { name: 'a txn of 129 puts', op: txn(many(129, (i) => put(`k${i}`))), error: 'tooManyOps' },
  { name: 'a txn of 129 compares', op: { txn: txnReq({ compare: many(129, () => (({ key: b('k'), rangeEnd: new Uint8Array(0), target: 0 as const, result: 0 as const, version: 0 }))) }) }, error: 'tooManyOps' },
  // The outer txn has 101 ops, so the nested one may have 128 - 101 = 27.
  { name: 'nested budgets shrink', op: txn([...many(100, (i) => put(`k${i}`)), txn(many(28, (i) => put(`n${i}`)))]), error: 'tooManyOps' },
  { name: 'nested within budget', op: txn([...many(100, (i) => put(`k${i}`)), txn(many(27, (i) => put(`n${i}`)))]), error: null },
  { name: 'a compare with an empty key', op: { txn: txnReq({ compare: [{ key: new Uint8Array(0), rangeEnd: new Uint8Array(0), target: 0, result: 0 }] }) }, error: 'emptyKey' },
  { name: 'an empty key inside a txn', op: txn([put('')]), error: 'emptyKey' },
  { name: 'two puts of one key', op: txn([put('a'), put('a')]), error: 'duplicateKey' },
  { name: 'put and delete of one key', op: txn([del('a'), put('a')]), error: 'duplicateKey' },
  { name: 'put after a delete of a range holding it', op: txn([put('b'), del('a', 'c')]), error: 'duplicateKey' },
  { name: 'put with a from-key delete (etcd does not see it)', op: txn([put('b'), del('a', '\0')]), error: null },
  { name: 'the same key in success and failure', op: { txn: txnReq({ success: [put('a')], failure: [put('a')] }) }, error: null },
  { name: 'a key in both branches of a nested txn', op: txn([txn([put('a')], [put('a')])]), error: null },
  { name: 'a nested put duplicating an outer put', op: txn([put('a'), txn([put('a')])]), error: 'duplicateKey' },
  { name: 'a nested put under an outer delete', op: txn([del('a', 'z'), txn([put('b')])]), error: 'duplicateKey' },
  { name: 'an outer put under a nested delete', op: txn([put('b'), txn([del('a', 'z')])]), error: 'duplicateKey' },
  { name: 'two deletes of one key', op: txn([del('a'), del('a')]), error: null },
  { name: 'puts of one key in two nested txns', op: txn([txn([put('a')]), txn([put('a')])]), error: 'duplicateKey' },
];
