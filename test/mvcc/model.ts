/**
 * A tiny reference model of etcd's KV semantics: a naive list of every revision ever written, answers
 * computed by brute force (no index, no generations, compaction only changes what may be read).
 * Written independently of src/mvcc so the model-based test can catch the store's bookkeeping bugs.
 */
import { Crc32c, encodeKeyValue } from '../../src/mvcc/kv-codec.js';
import { revisionToBytes } from '../../src/mvcc/revision.js';
import {
  MvccError, SortOrder, SortTarget,
  type Compare, type DeleteRangeRequest, type DeleteRangeResponse, type Event, type KeyValue, type PutRequest,
  type PutResponse, type RangeRequest, type RangeResponse, type RequestOp, type ResponseOp, type TxnRequest, type TxnResponse,
} from '../../src/mvcc/types.js';

export const toStr = (b: Uint8Array): string => String.fromCharCode(...b);
export const toBytes = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const cmpStr = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

interface Plan {
  ok: boolean;
  ops: RequestOp[];
  nested: Plan[];
}

interface Rec {
  main: number;
  sub: number;
  key: string;
  tomb: boolean;
  kv: KeyValue;
}

export class Model {
  recs: Rec[] = [];
  rev = 1;
  compactRev = -1;
  leases = new Set<bigint>();

  #live(key: string, atRev: number): Rec | undefined {
    let found: Rec | undefined;
    for (const r of this.recs) if (r.key === key && r.main <= atRev) found = r;
    return found?.tomb ? undefined : found;
  }

  /** Live records in [key, end) ("" end: single key; "\0": from key) at atRev, key order. */
  #liveIn(key: string, end: string, atRev: number): Rec[] {
    const keys = [...new Set(this.recs.map((r) => r.key))].sort(cmpStr);
    const inRange = (k: string): boolean => end === '' ? k === key : end === '\0' ? k >= key : k >= key && k < end;
    return keys.filter(inRange).map((k) => this.#live(k, atRev)).filter((r): r is Rec => r !== undefined);
  }

  range(req: RangeRequest, curRev = this.rev): RangeResponse {
    if (req.revision > curRev) throw new MvccError('futureRev');
    const rev = req.revision <= 0 ? curRev : req.revision;
    if (rev < this.compactRev) throw new MvccError('compacted');
    const live = this.#liveIn(toStr(req.key), toStr(req.rangeEnd), rev).map((r) => r.kv);
    if (req.countOnly) return { kvs: [], more: false, count: live.length, revision: curRev };
    let kvs = live.filter((kv) =>
      (req.maxModRevision === 0 || kv.modRevision <= req.maxModRevision) && (req.minModRevision === 0 || kv.modRevision >= req.minModRevision) &&
      (req.maxCreateRevision === 0 || kv.createRevision <= req.maxCreateRevision) && (req.minCreateRevision === 0 || kv.createRevision >= req.minCreateRevision));
    // etcd fetches only limit+1 keys (in key order) when neither a sort order nor a filter is given, and
    // then still sorts them ascending when the target is not the key.
    const filtered = req.sortOrder !== SortOrder.None || req.minModRevision !== 0 || req.maxModRevision !== 0 || req.minCreateRevision !== 0 || req.maxCreateRevision !== 0;
    if (!filtered && req.limit > 0) kvs = kvs.slice(0, req.limit + 1);
    const order = req.sortTarget !== SortTarget.Key && req.sortOrder === SortOrder.None ? SortOrder.Ascend : req.sortOrder;
    const field = (kv: KeyValue): number | string => [toStr(kv.key), kv.version, kv.createRevision, kv.modRevision, toStr(kv.value)][req.sortTarget]!;
    const c = (a: KeyValue, b: KeyValue): number => { const x = field(a); const y = field(b); return x < y ? -1 : x > y ? 1 : 0; };
    if (order === SortOrder.Ascend) kvs.sort(c);
    if (order === SortOrder.Descend) kvs.sort((a, b) => c(b, a));
    const more = req.limit > 0 && kvs.length > req.limit;
    if (more) kvs = kvs.slice(0, req.limit);
    if (req.keysOnly) kvs = kvs.map((kv) => ({ ...kv, value: new Uint8Array(0) }));
    return { kvs, more, count: live.length, revision: curRev };
  }

  #pending: Rec[] = [];
  #readRev(): number {
    return this.#pending.length > 0 ? this.rev + 1 : this.rev;
  }

  #write(key: string, kv: KeyValue, tomb: boolean): void {
    const rec: Rec = { main: this.rev + 1, sub: this.#pending.length, key, tomb, kv };
    this.#pending.push(rec);
    this.recs.push(rec);
  }

  #put(req: PutRequest): PutResponse {
    const key = toStr(req.key);
    const prev = this.#live(key, this.#readRev());
    if ((req.ignoreValue || req.ignoreLease) && !prev) throw new MvccError('keyNotFound');
    const main = this.rev + 1;
    const kv: KeyValue = {
      key: req.key, createRevision: prev ? prev.kv.createRevision : main, modRevision: main, version: prev ? prev.kv.version + 1 : 1,
      value: req.ignoreValue ? prev!.kv.value : req.value, lease: req.ignoreLease ? prev!.kv.lease : req.lease,
    };
    this.#write(key, kv, false);
    return req.prevKv && prev ? { prevKv: prev.kv, revision: main } : { revision: main };
  }

  #delete(req: DeleteRangeRequest): DeleteRangeResponse {
    const live = this.#liveIn(toStr(req.key), toStr(req.rangeEnd), this.#readRev());
    const main = this.rev + 1;
    for (const r of live) this.#write(r.key, { key: r.kv.key, createRevision: 0, modRevision: main, version: 0, value: new Uint8Array(0), lease: 0n }, true);
    return { deleted: live.length, prevKvs: req.prevKv ? live.map((r) => r.kv) : [], revision: this.#pending.length > 0 ? main : this.rev };
  }

  #end(): number {
    if (this.#pending.length > 0) this.rev++;
    this.#pending = [];
    return this.rev;
  }

  put(req: PutRequest): PutResponse {
    if (req.lease !== 0n && !this.leases.has(req.lease)) throw new MvccError('leaseNotFound');
    if ((req.ignoreValue || req.ignoreLease) && !this.#live(toStr(req.key), this.rev)) throw new MvccError('keyNotFound');
    const resp = this.#put(req);
    this.#end();
    return resp;
  }

  deleteRange(req: DeleteRangeRequest): DeleteRangeResponse {
    const resp = this.#delete(req);
    this.#end();
    return resp;
  }

  #compare(c: Compare): boolean {
    const live = this.#liveIn(toStr(c.key), toStr(c.rangeEnd), this.rev);
    if (live.length === 0 && c.target === 3) return false;
    const kvs = live.length === 0 ? [{ key: c.key, createRevision: 0, modRevision: 0, version: 0, value: new Uint8Array(0), lease: 0n }] : live.map((r) => r.kv);
    return kvs.every((kv) => {
      const [a, b] = [[kv.version, c.version ?? 0], [kv.createRevision, c.createRevision ?? 0], [kv.modRevision, c.modRevision ?? 0],
        [toStr(kv.value), toStr(c.value ?? new Uint8Array(0))], [kv.lease, c.lease ?? 0n]][c.target]!;
      return [a === b, a! > b!, a! < b!, a !== b][c.result]!;
    });
  }

  /** Decide every branch first (all compares see the pre-txn state), then check, then run. */
  txn(req: TxnRequest): TxnResponse {
    const plan = (t: TxnRequest): Plan => {
      const ok = t.compare.every((c) => this.#compare(c));
      const ops = ok ? t.success : t.failure;
      return { ok, ops, nested: ops.filter((o): o is { txn: TxnRequest } => 'txn' in o).map((o) => plan(o.txn)) };
    };
    const p = plan(req);
    const flat = (q: Plan): RequestOp[] => { let n = 0; return q.ops.flatMap((o) => ('txn' in o ? flat(q.nested[n++]!) : [o])); };
    const hasWrite = (t: TxnRequest): boolean => [...t.success, ...t.failure].some((o) => 'put' in o || 'deleteRange' in o || ('txn' in o && hasWrite(o.txn)));
    if (hasWrite(req)) {
      for (const o of flat(p)) {
        if (!('put' in o)) continue;
        if ((o.put.ignoreValue || o.put.ignoreLease) && !this.#live(toStr(o.put.key), this.rev)) throw new MvccError('keyNotFound');
        if (o.put.lease !== 0n && !this.leases.has(o.put.lease)) throw new MvccError('leaseNotFound');
      }
    }
    for (const o of flat(p)) {
      if ('range' in o && o.range.revision !== 0 && o.range.revision > this.rev) throw new MvccError('futureRev');
      if ('range' in o && o.range.revision !== 0 && o.range.revision < this.compactRev) throw new MvccError('compacted');
    }
    const run = (q: Plan): TxnResponse => {
      let n = 0;
      const responses: ResponseOp[] = q.ops.map((o): ResponseOp => {
        if ('range' in o) return { range: this.range(o.range, this.#readRev()) };
        if ('put' in o) return { put: this.#put(o.put) };
        if ('deleteRange' in o) return { deleteRange: this.#delete(o.deleteRange) };
        return { txn: run(q.nested[n++]!) };
      });
      return { succeeded: q.ok, responses, revision: 0 };
    };
    // Where etcd would panic mid-txn (ignore_value on a key the txn itself deleted), the txn is refused whole.
    const [recs, pending] = [this.recs.length, this.#pending.length];
    let resp: TxnResponse;
    try {
      resp = run(p);
    } catch (err) {
      this.recs.length = recs;
      this.#pending.length = pending;
      throw err;
    }
    resp.revision = this.#end();
    return resp;
  }

  compact(rev: number): void {
    if (rev <= this.compactRev) throw new MvccError('compacted');
    if (rev > this.rev) throw new MvccError('futureRev');
    this.compactRev = rev;
  }

  events(from: number, to: number): Event[] {
    if (from > 0 && from <= this.compactRev) throw new MvccError('compacted');
    return this.recs.filter((r) => r.main >= from && r.main <= to).map((r) => {
      const e: Event = { type: r.tomb ? 1 : 0, kv: r.kv };
      const prev = r.main - 1 >= this.compactRev ? this.#live(r.key, r.main - 1) : undefined;
      if (prev) e.prevKv = prev.kv;
      return e;
    });
  }

  /** etcd's HashKV over what a compacted etcd backend still holds. */
  hashKV(rev: number): number {
    if (rev > 0 && rev < this.compactRev) throw new MvccError('compacted');
    if (rev > 0 && rev > this.rev) throw new MvccError('futureRev');
    const at = rev === 0 ? this.rev : rev;
    const keys = [...new Set(this.recs.map((r) => r.key))];
    const keep = new Set(keys.map((k) => this.#live(k, at)).filter((r): r is Rec => r !== undefined));
    const survivors = new Set(keys.map((k) => this.#live(k, this.compactRev)).filter((r): r is Rec => r !== undefined));
    const crc = new Crc32c().update(new TextEncoder().encode('key'));
    for (const r of this.recs) {
      if (r.main > at) continue;
      if (r.main <= this.compactRev && !survivors.has(r)) continue; // physically compacted away
      if (r.main <= this.compactRev && keep.size > 0 && !keep.has(r)) continue;
      crc.update(revisionToBytes(r, r.tomb));
      crc.update(encodeKeyValue(r.tomb ? { ...r.kv, modRevision: 0 } : r.kv));
    }
    return crc.sum();
  }
}
