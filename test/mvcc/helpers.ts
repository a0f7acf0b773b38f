import { utf8 } from '../../src/base/bytes.js';
import type { Compare, DeleteRangeRequest, PutRequest, RangeRequest, TxnRequest } from '../../src/mvcc/types.js';
import type { LeaseHooks } from '../../src/mvcc/lease-hooks.js';

export const b = (s: string): Uint8Array => utf8(s);
export const s = (u: Uint8Array): string => new TextDecoder().decode(u);

export function rangeReq(key: string | Uint8Array, o: Partial<RangeRequest> = {}): RangeRequest {
  return {
    key: typeof key === 'string' ? b(key) : key, rangeEnd: new Uint8Array(0), limit: 0, revision: 0, sortOrder: 0, sortTarget: 0,
    serializable: false, keysOnly: false, countOnly: false, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0,
    maxCreateRevision: 0, ...o,
  };
}

export function putReq(key: string, value: string, o: Partial<PutRequest> = {}): PutRequest {
  return { key: b(key), value: b(value), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false, ...o };
}

export function delReq(key: string, rangeEnd = '', o: Partial<DeleteRangeRequest> = {}): DeleteRangeRequest {
  return { key: b(key), rangeEnd: b(rangeEnd), prevKv: false, ...o };
}

export function txnReq(o: Partial<TxnRequest> = {}): TxnRequest {
  return { compare: [], success: [], failure: [], ...o };
}

export function cmp(key: string, target: Compare['target'], result: Compare['result'], operand: Partial<Compare> = {}): Compare {
  return { key: b(key), rangeEnd: new Uint8Array(0), target, result, ...operand };
}

/** A lessor stand-in that records attach/detach calls. */
export class FakeLeases implements LeaseHooks {
  readonly leases = new Map<bigint, Set<string>>();
  grant(id: bigint): void {
    this.leases.set(id, new Set());
  }
  exists(id: bigint): boolean {
    return this.leases.has(id);
  }
  attach(id: bigint, key: Uint8Array): void {
    this.leases.get(id)?.add(s(key));
  }
  detach(id: bigint, key: Uint8Array): void {
    this.leases.get(id)?.delete(s(key));
  }
}
