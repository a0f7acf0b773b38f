/**
 * A small, obviously-correct in-memory MVCC store for the gRPC tests (no Raft, no backend): the whole event
 * history is kept, so a read at an old revision replays it. Slow (O(history)) for old revisions and fine for
 * tests. It implements mvcc's WatchableStore so the real WatchHub runs on top of it.
 */
import { compareBytes } from '../../src/base/bytes.js';
import type {
  Compare,
  DeleteRangeRequest,
  DeleteRangeResponse,
  Event,
  KeyValue,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  RequestOp,
  ResponseOp,
  TxnRequest,
  TxnResponse,
} from '../../src/mvcc/types.js';
import { MvccError } from '../../src/mvcc/types.js';
import type { WatchableStore } from '../../src/mvcc/watch-types.js';

const id = (k: Uint8Array): string => Buffer.from(k).toString('latin1');

export function inRange(key: Uint8Array, start: Uint8Array, end: Uint8Array): boolean {
  if (end.length === 0) return compareBytes(key, start) === 0;
  if (end.length === 1 && end[0] === 0) return compareBytes(key, start) >= 0;
  return compareBytes(key, start) >= 0 && compareBytes(key, end) < 0;
}

interface Write {
  revision: number;
  events: Event[];
}

export class FakeStore implements WatchableStore {
  revision = 1;
  compactRevision = 0;
  #current = new Map<string, KeyValue>();
  #history: Event[] = [];
  #listeners = new Set<(revision: number, events: Event[]) => void>();
  /** Called for each put so the lease table can track attachments; throws to refuse. */
  onPut: (kv: KeyValue) => void = () => {};
  onDelete: (kv: KeyValue) => void = () => {};

  onWrite(listener: (revision: number, events: Event[]) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  readEvents(from: number, to: number): Event[] {
    if (from <= this.compactRevision) throw new MvccError('compacted');
    return this.#history.filter((e) => e.kv.modRevision >= from && e.kv.modRevision <= to);
  }

  #stateAt(revision: number): Map<string, KeyValue> {
    if (revision === 0 || revision === this.revision) return this.#current;
    if (revision > this.revision) throw new MvccError('futureRev');
    if (revision < this.compactRevision) throw new MvccError('compacted');
    const state = new Map<string, KeyValue>();
    for (const e of this.#history) {
      if (e.kv.modRevision > revision) break;
      if (e.type === 0) state.set(id(e.kv.key), e.kv);
      else state.delete(id(e.kv.key));
    }
    return state;
  }

  range(r: RangeRequest, atRevision = r.revision): RangeResponse {
    const state = this.#stateAt(atRevision);
    let kvs = [...state.values()].filter((kv) => inRange(kv.key, r.key, r.rangeEnd));
    kvs = kvs.filter(
      (kv) =>
        (r.minModRevision === 0 || kv.modRevision >= r.minModRevision) &&
        (r.maxModRevision === 0 || kv.modRevision <= r.maxModRevision) &&
        (r.minCreateRevision === 0 || kv.createRevision >= r.minCreateRevision) &&
        (r.maxCreateRevision === 0 || kv.createRevision <= r.maxCreateRevision),
    );
    kvs.sort((a, b) => compareBytes(a.key, b.key));
    if (r.sortOrder === 2) kvs.reverse();
    const count = kvs.length;
    const page = r.limit > 0 ? kvs.slice(0, r.limit) : kvs;
    return {
      kvs: r.countOnly ? [] : page.map((kv) => (r.keysOnly ? { ...kv, value: new Uint8Array(0) } : kv)),
      more: page.length < count,
      count,
      revision: this.revision,
    };
  }

  #begin(): Write {
    return { revision: this.revision + 1, events: [] };
  }

  #commit(w: Write): void {
    if (w.events.length === 0) return;
    this.revision = w.revision;
    this.#history.push(...w.events);
    for (const l of this.#listeners) l(w.revision, w.events);
  }

  #put(w: Write, r: PutRequest): PutResponse {
    const prev = this.#current.get(id(r.key));
    if ((r.ignoreValue || r.ignoreLease) && !prev) throw new MvccError('keyNotFound');
    const kv: KeyValue = {
      key: r.key,
      value: r.ignoreValue ? prev!.value : r.value,
      lease: r.ignoreLease ? prev!.lease : r.lease,
      createRevision: prev ? prev.createRevision : w.revision,
      modRevision: w.revision,
      version: prev ? prev.version + 1 : 1,
    };
    this.onPut(kv);
    if (prev) this.onDelete(prev);
    this.#current.set(id(r.key), kv);
    w.events.push(prev ? { type: 0, kv, prevKv: prev } : { type: 0, kv });
    return { ...(r.prevKv && prev ? { prevKv: prev } : {}), revision: w.revision };
  }

  #delete(w: Write, r: DeleteRangeRequest): DeleteRangeResponse {
    const victims = [...this.#current.values()]
      .filter((kv) => inRange(kv.key, r.key, r.rangeEnd))
      .sort((a, b) => compareBytes(a.key, b.key));
    for (const prev of victims) {
      this.#current.delete(id(prev.key));
      this.onDelete(prev);
      const tomb: KeyValue = { key: prev.key, value: new Uint8Array(0), lease: 0n, createRevision: 0, modRevision: w.revision, version: 0 };
      w.events.push({ type: 1, kv: tomb, prevKv: prev });
    }
    return {
      deleted: victims.length,
      prevKvs: r.prevKv ? victims : [],
      revision: victims.length > 0 ? w.revision : this.revision,
    };
  }

  put(r: PutRequest): PutResponse {
    const w = this.#begin();
    const res = this.#put(w, r);
    this.#commit(w);
    return res;
  }

  deleteRange(r: DeleteRangeRequest): DeleteRangeResponse {
    const w = this.#begin();
    const res = this.#delete(w, r);
    this.#commit(w);
    return res;
  }

  txn(r: TxnRequest): TxnResponse {
    const w = this.#begin();
    const res = this.#txn(w, r);
    this.#commit(w);
    return { ...res, revision: this.revision };
  }

  #txn(w: Write, r: TxnRequest): TxnResponse {
    const succeeded = r.compare.every((c) => this.#compare(c));
    const responses = (succeeded ? r.success : r.failure).map((op) => this.#op(w, op));
    return { succeeded, responses, revision: w.events.length > 0 ? w.revision : this.revision };
  }

  #op(w: Write, op: RequestOp): ResponseOp {
    const rev = (): number => (w.events.length > 0 ? w.revision : this.revision);
    if ('range' in op) {
      const res = this.range(op.range, op.range.revision === 0 ? this.revision : op.range.revision);
      return { range: { ...res, revision: rev() } };
    }
    if ('put' in op) return { put: this.#put(w, op.put) };
    if ('deleteRange' in op) {
      const res = this.#delete(w, op.deleteRange);
      return { deleteRange: { ...res, revision: rev() } };
    }
    const res = this.#txn(w, op.txn);
    return { txn: { ...res, revision: rev() } };
  }

  #compare(c: Compare): boolean {
    const kvs = [...this.#current.values()].filter((kv) => inRange(kv.key, c.key, c.rangeEnd));
    const targets: KeyValue[] = kvs.length > 0 ? kvs : c.target === 3 ? [] : [missing(c.key)];
    if (targets.length === 0) return false;
    return targets.every((kv) => {
      const d = compareTarget(kv, c);
      return [d === 0, d > 0, d < 0, d !== 0][c.result]!;
    });
  }

  compact(revision: number): void {
    if (revision <= this.compactRevision) throw new MvccError('compacted');
    if (revision > this.revision) throw new MvccError('futureRev');
    this.compactRevision = revision;
  }

  get size(): number {
    return this.#current.size;
  }
}

function missing(key: Uint8Array): KeyValue {
  return { key, value: new Uint8Array(0), lease: 0n, createRevision: 0, modRevision: 0, version: 0 };
}

function compareTarget(kv: KeyValue, c: Compare): number {
  switch (c.target) {
    case 0:
      return Math.sign(kv.version - (c.version ?? 0));
    case 1:
      return Math.sign(kv.createRevision - (c.createRevision ?? 0));
    case 2:
      return Math.sign(kv.modRevision - (c.modRevision ?? 0));
    case 3:
      return Math.sign(compareBytes(kv.value, c.value ?? new Uint8Array(0)));
    default: {
      const l = c.lease ?? 0n;
      return kv.lease === l ? 0 : kv.lease > l ? 1 : -1;
    }
  }
}
