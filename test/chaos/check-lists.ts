/**
 * L6: Kubernetes list-then-watch. A paginated list pinned at R must be exactly the key space under its
 * prefix at R (rebuilt from the reference log when that is complete through R), its count the number of keys
 * in the whole range; count_only ranges likewise. A reflector (list at R, watch from R+1, resumed after its
 * last delivered revision) must, by applying its events to its list, end up with exactly the list of the
 * same prefix taken at the revision it last knew.
 */
import { prefixEnd, type History, type Kv, type Op, type WatchSession } from './history.js';
import { describeOp } from './check-l1.js';
import { lastObserved, sameKv, type ReferenceLog, type RefEvent } from './reference-log.js';

type ListOp = Op & { input: { type: 'list'; prefix: string }; output: { type: 'list'; rev: number; kvs: Kv[]; count: number } };
type CountOp = Op & { input: { type: 'count'; prefix: string }; output: { type: 'count'; rev: number; count: number } };

function isList(op: Op): op is ListOp {
  return op.input.type === 'list' && op.output?.type === 'list';
}
function isCount(op: Op): op is CountOp {
  return op.input.type === 'count' && op.output?.type === 'count';
}

function underPrefix(state: Map<string, RefEvent> | Map<string, Kv>, prefix: string): string[] {
  const end = prefixEnd(prefix);
  return [...state.keys()].filter((k) => k >= prefix && k < end).sort();
}

function compareList(what: string, kvs: Kv[], expected: Map<string, RefEvent>, prefix: string, out: string[]): void {
  const want = underPrefix(expected, prefix);
  const got = kvs.map((kv) => kv.key);
  const missing = want.filter((k) => !got.includes(k));
  const extra = got.filter((k) => !expected.has(k));
  if (missing.length > 0 || extra.length > 0) {
    out.push(`L6 ${what}: missing ${JSON.stringify(missing.slice(0, 5))}, unexpected ${JSON.stringify(extra.slice(0, 5))}`);
    return;
  }
  for (const kv of kvs) {
    const ev = expected.get(kv.key)!;
    const ok = ev.kv ? sameKv(ev.kv, kv) : ev.value === kv.value && ev.rev === kv.modRev;
    if (!ok) out.push(`L6 ${what}: ${kv.key} is ${kv.value}@${kv.modRev}, the history says ${ev.value}@${ev.rev}`);
  }
}

function listShape(op: ListOp, out: string[]): void {
  const keys = op.output.kvs.map((kv) => kv.key);
  for (let i = 1; i < keys.length; i++) if (!(keys[i - 1]! < keys[i]!)) out.push(`L6 ${describeOp(op)}: keys not strictly ascending at ${keys[i]}`);
  if (op.output.count !== keys.length) out.push(`L6 list #${op.id}: count ${op.output.count} but the pages hold ${keys.length} keys`);
  for (const kv of op.output.kvs) if (kv.modRev > op.output.rev) out.push(`L6 list #${op.id} at ${op.output.rev} holds ${kv.key}@${kv.modRev}`);
}

function reflectors(h: History, out: string[]): void {
  const next = new Map<number, WatchSession>();
  for (const s of h.watches) if (s.resumes !== undefined) next.set(s.resumes, s);
  for (const first of h.watches) {
    if (first.listOp === undefined) continue;
    const list = h.ops[first.listOp];
    if (list === undefined || !isList(list)) continue;
    if (first.startRev !== list.output.rev + 1) out.push(`L6 watch ${first.id} starts at ${first.startRev}, its list is at ${list.output.rev}`);
    const cache = new Map<string, Kv>(list.output.kvs.map((kv) => [kv.key, kv]));
    let s: WatchSession | undefined = first;
    let last = list.output.rev;
    while (s !== undefined) {
      if (s.startRev !== last + 1) out.push(`L6 watch ${s.id} resumes at ${s.startRev} after revision ${last}`);
      for (const r of s.responses) for (const e of r.events) {
        if (e.type === 'put') cache.set(e.kv.key, e.kv);
        else cache.delete(e.kv.key);
      }
      last = lastObserved(s);
      s = next.get(s.id);
    }
    const prefix = list.input.prefix;
    const check = [...h.ops].reverse().find((op): op is ListOp => isList(op) && op.input.prefix === prefix && op.output.rev === last && op.id !== list.id);
    if (check === undefined) continue;
    const expected = new Map<string, RefEvent>([...check.output.kvs].map((kv) => [kv.key, { rev: kv.modRev, key: kv.key, type: 'put', value: kv.value, kv, source: `list #${check.id}` }]));
    compareList(`reflector from list #${list.id} at ${last} vs list #${check.id}`, [...cache.values()].sort((a, b) => (a.key < b.key ? -1 : 1)), expected, prefix, out);
  }
}

export function checkLists(h: History, ref: ReferenceLog): string[] {
  const out: string[] = [];
  const lists = h.ops.filter(isList);
  const counts = h.ops.filter(isCount);
  const revs = [...lists.map((op) => op.output.rev), ...counts.map((op) => op.output.rev)].filter((r) => r <= ref.completeThrough);
  const states = ref.statesAt(revs);
  for (const op of lists) {
    listShape(op, out);
    const st = states.get(op.output.rev);
    if (st !== undefined) compareList(`list #${op.id} of ${op.input.prefix} at ${op.output.rev}`, op.output.kvs, st, op.input.prefix, out);
  }
  for (const op of counts) {
    const st = states.get(op.output.rev);
    if (st === undefined) continue;
    const n = underPrefix(st, op.input.prefix).length;
    if (n !== op.output.count) out.push(`L6 count #${op.id} of ${op.input.prefix} at ${op.output.rev}: ${op.output.count}, the history has ${n}`);
  }
  reflectors(h, out);
  return out;
}
