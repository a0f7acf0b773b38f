/**
 * Txn with etcd 3.5's semantics (etcdserver/apply.go): every compare, including those of nested txns, is
 * evaluated against the store as it was before the txn; then the chosen path's puts are checked (missing key
 * for ignore_value/ignore_lease, missing lease) and its ranges' revisions, before anything is written; then
 * the ops run in order in one write, so reads see the txn's earlier writes and every change shares one main
 * revision. A txn that changes nothing does not bump the revision.
 */
import { assert, unreachable } from '../base/assert.js';
import { compareBytes } from '../base/bytes.js';
import type { MvccCore, WriteTxn } from './kv-core.js';
import { rangeEndOf, rangeRequest } from './kv-read.js';
import { keyText } from './key-text.js';
import {
  CompareResult, CompareTarget, MvccError,
  type Compare, type DeleteRangeRequest, type DeleteRangeResponse, type KeyValue, type PutRequest,
  type PutResponse, type RequestOp, type ResponseOp, type TxnRequest, type TxnResponse,
} from './types.js';

/** The branch each (nested) txn takes, decided before the txn writes anything. */
interface TxnPath {
  succeeded: boolean;
  /** Paths of the nested txns among the chosen ops, in op order. */
  nested: TxnPath[];
}

function compareKv(c: Compare, kv: KeyValue): boolean {
  let result: number;
  switch (c.target) {
    case CompareTarget.Value: result = compareBytes(kv.value, c.value ?? new Uint8Array(0)); break;
    case CompareTarget.Create: result = Math.sign(kv.createRevision - (c.createRevision ?? 0)); break;
    case CompareTarget.Mod: result = Math.sign(kv.modRevision - (c.modRevision ?? 0)); break;
    case CompareTarget.Version: result = Math.sign(kv.version - (c.version ?? 0)); break;
    case CompareTarget.Lease: {
      const lease = c.lease ?? 0n;
      result = kv.lease === lease ? 0 : kv.lease > lease ? 1 : -1;
      break;
    }
    default: return unreachable(c.target);
  }
  switch (c.result) {
    case CompareResult.Equal: return result === 0;
    case CompareResult.NotEqual: return result !== 0;
    case CompareResult.Greater: return result > 0;
    case CompareResult.Less: return result < 0;
    default: return unreachable(c.result);
  }
}

const absentKv: KeyValue = { key: new Uint8Array(0), createRevision: 0, modRevision: 0, version: 0, value: new Uint8Array(0), lease: 0n };

/** etcd's applyCompare: a missing key compares as all-zero, except VALUE, which then always fails. */
function applyCompare(core: MvccCore, atRev: number, c: Compare): boolean {
  const { hits } = core.rangeEntries(c.key, rangeEndOf(c.rangeEnd), atRev, 0);
  if (hits.length === 0) return c.target !== CompareTarget.Value && compareKv(c, absentKv);
  // Only a VALUE compare reads values; the others are answered from the index.
  return hits.every((h) => compareKv(c, c.target === CompareTarget.Value ? core.kvOf(h) : core.metaOf(h)));
}

function opsOf(txn: TxnRequest, path: TxnPath): RequestOp[] {
  return path.succeeded ? txn.success : txn.failure;
}

function choosePath(core: MvccCore, atRev: number, txn: TxnRequest): TxnPath {
  const succeeded = txn.compare.every((c) => applyCompare(core, atRev, c));
  const nested: TxnPath[] = [];
  for (const op of succeeded ? txn.success : txn.failure) if ('txn' in op) nested.push(choosePath(core, atRev, op.txn));
  return { succeeded, nested };
}

/** Visit the chosen ops depth-first (etcd's checkRequests order). */
function forEachChosenOp(txn: TxnRequest, path: TxnPath, f: (op: RequestOp) => void): void {
  let n = 0;
  for (const op of opsOf(txn, path)) {
    if ('txn' in op) forEachChosenOp(op.txn, path.nested[n++]!, f);
    else f(op);
  }
}

export function checkPut(core: MvccCore, atRev: number, put: PutRequest): void {
  if ((put.ignoreValue || put.ignoreLease) && core.rangeEntries(put.key, undefined, atRev, 0).total === 0) {
    throw new MvccError('keyNotFound');
  }
  if (put.lease !== 0n && !(core.hooks?.exists(put.lease) ?? false)) throw new MvccError('leaseNotFound');
}

function inRange(k: Uint8Array, key: Uint8Array, end: Uint8Array | undefined): boolean {
  if (end === undefined) return compareBytes(k, key) === 0;
  return compareBytes(k, key) >= 0 && (end.length === 0 || compareBytes(k, end) < 0);
}


/**
 * etcd's checkRequestPut over the chosen path, but aware of the txn's own earlier ops: etcd checks
 * ignore_value/ignore_lease against the pre-txn state and panics mid-apply when an earlier op of the same
 * txn deleted the key (a from-key delete passes its duplicate check). After etcd's own checks pass, we
 * refuse such a txn with keyNotFound before writing anything; wherever etcd does not crash, answers agree.
 */
function checkPutsInTxnOrder(core: MvccCore, atRev: number, txn: TxnRequest, path: TxnPath): void {
  const overlay = new Map<string, { key: Uint8Array; live: boolean }>();
  forEachChosenOp(txn, path, (op) => {
    if ('put' in op) {
      const live = overlay.get(keyText(op.put.key))?.live;
      if ((op.put.ignoreValue || op.put.ignoreLease) && live === false) throw new MvccError('keyNotFound');
      overlay.set(keyText(op.put.key), { key: op.put.key, live: true });
    } else if ('deleteRange' in op) {
      const end = rangeEndOf(op.deleteRange.rangeEnd);
      for (const { ki } of core.rangeEntries(op.deleteRange.key, end, atRev, 0).hits) {
        if (!overlay.has(ki.text)) overlay.set(ki.text, { key: ki.key, live: false });
      }
      for (const o of overlay.values()) if (inRange(o.key, op.deleteRange.key, end)) o.live = false;
    }
  });
}

function isWriteTxn(txn: TxnRequest): boolean {
  return [...txn.success, ...txn.failure].some((op) => 'put' in op || 'deleteRange' in op || ('txn' in op && isWriteTxn(op.txn)));
}

/** Put inside a write (the lease was checked by the caller). */
export function applyPut(w: WriteTxn, core: MvccCore, req: PutRequest): PutResponse {
  let prev: KeyValue | undefined;
  if (req.ignoreValue || req.ignoreLease || req.prevKv) {
    const hit = core.rangeEntries(req.key, undefined, w.readRev, 0).hits[0];
    if (hit !== undefined) prev = core.kvOf(hit);
  }
  if ((req.ignoreValue || req.ignoreLease) && prev === undefined) throw new MvccError('keyNotFound');
  const value = req.ignoreValue ? prev!.value : req.value;
  const lease = req.ignoreLease ? prev!.lease : req.lease;
  w.put(req.key, value, lease);
  const resp: PutResponse = { revision: w.beginRev + 1 };
  if (req.prevKv && prev !== undefined) resp.prevKv = prev;
  return resp;
}

export function applyDeleteRange(w: WriteTxn, core: MvccCore, req: DeleteRangeRequest): DeleteRangeResponse {
  const end = rangeEndOf(req.rangeEnd);
  const prevKvs = req.prevKv ? core.rangeEntries(req.key, end, w.readRev, 0).hits.map((h) => core.kvOf(h)) : [];
  const deleted = w.deleteRange(req.key, end);
  // etcd: the delete's revision when it (or an earlier op of the txn) changed something, else the current one.
  return { deleted, prevKvs, revision: deleted !== 0 || w.changes > 0 ? w.beginRev + 1 : w.beginRev };
}

function applyOps(w: WriteTxn, core: MvccCore, txn: TxnRequest, path: TxnPath): TxnResponse {
  const responses: ResponseOp[] = [];
  let n = 0;
  for (const op of opsOf(txn, path)) {
    if ('range' in op) responses.push({ range: rangeRequest(core, op.range, w.readRev) });
    else if ('put' in op) responses.push({ put: applyPut(w, core, op.put) });
    else if ('deleteRange' in op) responses.push({ deleteRange: applyDeleteRange(w, core, op.deleteRange) });
    else if ('txn' in op) responses.push({ txn: applyOps(w, core, op.txn, path.nested[n++]!) });
    else unreachable(op);
  }
  // etcd never fills a nested txn's header: its revision stays 0. The caller sets the outer one.
  return { succeeded: path.succeeded, responses, revision: 0 };
}

export function applyTxn(core: MvccCore, txn: TxnRequest): TxnResponse {
  const atRev = core.currentRev;
  const path = choosePath(core, atRev, txn);
  const write = isWriteTxn(txn);
  if (write) forEachChosenOp(txn, path, (op) => { if ('put' in op) checkPut(core, atRev, op.put); });
  forEachChosenOp(txn, path, (op) => {
    if (!('range' in op) || op.range.revision === 0) return;
    // etcd's checkRequestRange (not rangeKeys): a negative revision below the compact revision is "compacted".
    if (op.range.revision > atRev) throw new MvccError('futureRev');
    if (op.range.revision < core.compactRev) throw new MvccError('compacted');
  });
  if (write) checkPutsInTxnOrder(core, atRev, txn, path);
  const w = core.beginWrite();
  let resp: TxnResponse;
  try {
    resp = applyOps(w, core, txn, path);
  } catch (err) {
    // Every expected refusal was checked above; a failure now would leave a half-applied txn (etcd panics).
    assert(false, `txn failed after its checks passed: ${String(err)}`);
  }
  const changed = w.changes > 0;
  w.end();
  resp.revision = changed ? w.beginRev + 1 : w.beginRev;
  return resp;
}
