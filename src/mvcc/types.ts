/**
 * MVCC vocabulary: requests and responses shaped exactly like etcd's protobuf messages (etcdserverpb / mvccpb),
 * in camelCase, so the gRPC layer maps fields 1:1. Keys and values are bytes; revisions are safe integers;
 * lease ids are bigint (int64 on the wire). Response headers are filled by the server, not here: results
 * report the store revision they observed or produced.
 *
 * This file is the contract between src/mvcc and src/node. Change it only with care.
 */

export interface KeyValue {
  key: Uint8Array;
  createRevision: number;
  modRevision: number;
  version: number;
  value: Uint8Array;
  /** 0n when the key has no lease. */
  lease: bigint;
}

export const EventType = { Put: 0, Delete: 1 } as const;
export type EventType = (typeof EventType)[keyof typeof EventType];

export interface Event {
  type: EventType;
  /** For a delete: the key with modRevision = the delete's revision, version 0, empty value (as etcd). */
  kv: KeyValue;
  prevKv?: KeyValue;
}

export const SortOrder = { None: 0, Ascend: 1, Descend: 2 } as const;
export type SortOrder = (typeof SortOrder)[keyof typeof SortOrder];
export const SortTarget = { Key: 0, Version: 1, Create: 2, Mod: 3, Value: 4 } as const;
export type SortTarget = (typeof SortTarget)[keyof typeof SortTarget];

export interface RangeRequest {
  key: Uint8Array;
  /** Empty: the single key. "\0": every key ≥ key. Otherwise [key, rangeEnd). */
  rangeEnd: Uint8Array;
  limit: number;
  /** 0: current. */
  revision: number;
  sortOrder: SortOrder;
  sortTarget: SortTarget;
  serializable: boolean;
  keysOnly: boolean;
  countOnly: boolean;
  minModRevision: number;
  maxModRevision: number;
  minCreateRevision: number;
  maxCreateRevision: number;
}

export interface RangeResponse {
  kvs: KeyValue[];
  more: boolean;
  /** Number of keys in the whole range at that revision (not only this page). */
  count: number;
  /** The revision the range was served at (header.revision: the store's current revision, as etcd). */
  revision: number;
}

export interface PutRequest {
  key: Uint8Array;
  value: Uint8Array;
  lease: bigint;
  prevKv: boolean;
  ignoreValue: boolean;
  ignoreLease: boolean;
}

export interface PutResponse {
  prevKv?: KeyValue;
  revision: number;
}

export interface DeleteRangeRequest {
  key: Uint8Array;
  rangeEnd: Uint8Array;
  prevKv: boolean;
}

export interface DeleteRangeResponse {
  deleted: number;
  prevKvs: KeyValue[];
  revision: number;
}

export const CompareResult = { Equal: 0, Greater: 1, Less: 2, NotEqual: 3 } as const;
export type CompareResult = (typeof CompareResult)[keyof typeof CompareResult];
export const CompareTarget = { Version: 0, Create: 1, Mod: 2, Value: 3, Lease: 4 } as const;
export type CompareTarget = (typeof CompareTarget)[keyof typeof CompareTarget];

export interface Compare {
  result: CompareResult;
  target: CompareTarget;
  key: Uint8Array;
  rangeEnd: Uint8Array;
  /** The operand for `target`: a number for Version/Create/Mod, bytes for Value, bigint for Lease. */
  version?: number;
  createRevision?: number;
  modRevision?: number;
  value?: Uint8Array;
  lease?: bigint;
}

export type RequestOp =
  | { range: RangeRequest }
  | { put: PutRequest }
  | { deleteRange: DeleteRangeRequest }
  | { txn: TxnRequest };

export type ResponseOp =
  | { range: RangeResponse }
  | { put: PutResponse }
  | { deleteRange: DeleteRangeResponse }
  | { txn: TxnResponse };

export interface TxnRequest {
  compare: Compare[];
  success: RequestOp[];
  failure: RequestOp[];
}

export interface TxnResponse {
  succeeded: boolean;
  responses: ResponseOp[];
  revision: number;
}

export interface CompactionRequest {
  revision: number;
  physical: boolean;
}

export type AlarmType = 'NONE' | 'NOSPACE' | 'CORRUPT';

export interface AlarmMember {
  memberId: bigint;
  alarm: AlarmType;
}

/** Expected MVCC refusals; the server maps each to etcd's exact gRPC status and message. */
export type MvccErrorCode =
  | 'compacted' // etcdserver: mvcc: required revision has been compacted
  | 'futureRev' // etcdserver: mvcc: required revision is a future revision
  | 'keyNotFound' // etcdserver: key not found (put with ignore_value/ignore_lease on a missing key)
  | 'leaseNotFound' // etcdserver: requested lease not found
  | 'leaseExists' // etcdserver: lease already exists
  | 'leaseTtlTooLarge' // etcdserver: too large lease TTL
  | 'noSpace'; // etcdserver: mvcc: database space exceeded
// Malformed requests (empty key, too many txn ops, ...) are refused before they reach the store, by the
// server's validator (src/node/request/validate.ts), with EtcdError.

export class MvccError extends Error {
  override name = 'MvccError';
  constructor(
    readonly code: MvccErrorCode,
    message?: string,
  ) {
    super(message ?? code);
  }
}
