/**
 * L1: linearizability of the single-key operations, key by key, against kvModel.
 *
 * Failed or timed-out writes may or may not have happened; they are placed at "any time after their call"
 * (ret = Infinity). Before the search, the final history (reference log) resolves most of them, as etcd's
 * robustness tests do: a failed put whose unique value shows up at revision r did happen, at r; one whose
 * value never shows up, while the log is complete through the final revision, never happened and is dropped.
 */
import type { History, Op } from './history.js';
import { kvModel, type KeyInput, type KeyOutput } from './kv-model.js';
import { checkLinearizable, type CallRec } from './porcupine.js';
import type { ReferenceLog } from './reference-log.js';

export interface L1Options {
  /** The revision after all traffic stopped; lets unobserved failed writes be dropped. */
  finalRev?: number;
  stepsMax?: number;
  /** Keys to check (default: every key a txn or get touched). */
  include?: (key: string) => boolean;
}

export interface L1Result {
  violations: string[];
  /** Keys whose search hit the step budget: neither proven nor refuted. */
  inconclusive: string[];
  keys: number;
  ops: number;
  resolved: number;
  dropped: number;
}

function toCall(op: Op, ref: ReferenceLog | undefined, o: L1Options, r: L1Result): CallRec<KeyInput, KeyOutput> | undefined {
  const input = op.input as KeyInput;
  const out = op.output;
  const known = out !== undefined && out.type !== 'error' && op.ret !== undefined;
  if (known) return { id: op.id, input, output: out as KeyOutput, call: op.call, ret: op.ret! };
  if (input.type === 'get') return undefined; // a failed read observed nothing
  if (input.action === 'put' && ref !== undefined) {
    const ev = ref.putByValue.get(input.value);
    if (ev !== undefined && ev.key === input.key) {
      r.resolved++;
      return { id: op.id, input, output: { type: 'txn', succeeded: true, rev: ev.rev }, call: op.call, ret: Infinity };
    }
    if (o.finalRev !== undefined && ref.completeThrough >= o.finalRev) {
      r.dropped++;
      return undefined;
    }
  }
  return { id: op.id, input, output: undefined, call: op.call, ret: Infinity };
}

export function describeOp(op: Op): string {
  const i = op.input;
  const what =
    i.type === 'txn' ? `txn ${i.key} mod==${i.cmpModRev} → ${i.action}${i.action === 'put' ? ' ' + i.value : ''}`
    : i.type === 'get' ? `get ${i.key}`
    : JSON.stringify(i);
  return `#${op.id} c${op.client} [${op.call},${op.ret ?? '?'}] ${what} ⇒ ${JSON.stringify(op.output ?? 'pending')}`;
}

export function checkL1(h: History, ref: ReferenceLog | undefined, o: L1Options = {}): L1Result {
  const r: L1Result = { violations: [], inconclusive: [], keys: 0, ops: 0, resolved: 0, dropped: 0 };
  const byKey = new Map<string, CallRec<KeyInput, KeyOutput>[]>();
  for (const op of h.ops) {
    if (op.input.type !== 'txn' && op.input.type !== 'get') continue;
    if (o.include && !o.include(op.input.key)) continue;
    const call = toCall(op, ref, o, r);
    if (call === undefined) continue;
    let list = byKey.get(op.input.key);
    if (list === undefined) byKey.set(op.input.key, (list = []));
    list.push(call);
  }
  for (const [key, calls] of byKey) {
    r.keys++;
    r.ops += calls.length;
    const res = checkLinearizable(kvModel, calls, o.stepsMax);
    if (res.ok === 'unknown') r.inconclusive.push(`${key}: ${calls.length} ops, gave up after ${res.steps} steps`);
    else if (!res.ok) {
      const stuck = res.stuck.map((id) => describeOp(h.ops[id]!)).join('; ');
      const tail = res.longest.slice(-4).map((id) => describeOp(h.ops[id]!)).join('\n    ');
      r.violations.push(`L1 key ${key} is not linearizable (${calls.length} ops): no order places ${stuck}\n    after the longest order found, ending:\n    ${tail}`);
    }
  }
  return r;
}
