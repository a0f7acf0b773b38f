/**
 * Wing–Gong linearizability search with Lowe's memoisation, as Porcupine does it: walk the history's
 * call/return entries in real-time order; at a call, try to linearize that operation now (apply it to the
 * model and lift its call and return out of the list); at a return whose call was not linearized yet, no
 * order works from here, so backtrack. A (linearized set, model state) pair already explored is never
 * explored again, which turns the exponential search into one that is fast on real histories.
 *
 * Models may be nondeterministic (an operation whose outcome is unknown may or may not have taken effect):
 * the search runs over SETS of model states, so one step never branches.
 *
 * Operations whose outcome is unknown carry ret = Infinity: they may be linearized at any point after their
 * call, and must be (a model step with no output accepts both "happened" and "did not happen").
 */

export interface Model<S, I, O> {
  init(): S;
  /** Every state the operation can lead to from `s` given its observed output (undefined: unknown). */
  step(s: S, input: I, output: O | undefined): S[];
  /** A canonical string for memoisation and deduplication. */
  key(s: S): string;
}

export interface CallRec<I, O> {
  id: number;
  input: I;
  output: O | undefined;
  call: number;
  /** Infinity when the outcome is unknown. */
  ret: number;
}

export type CheckResult =
  | { ok: true; steps: number }
  | { ok: false; steps: number; /** ids of the longest linearizable prefix found */ longest: number[]; /** the first op no order could place */ stuck: number[] }
  | { ok: 'unknown'; steps: number };

interface Entry<I, O> {
  call: boolean;
  op: CallRec<I, O>;
  index: number;
  match?: Entry<I, O>;
  prev?: Entry<I, O>;
  next?: Entry<I, O>;
}

function buildList<I, O>(ops: CallRec<I, O>[]): Entry<I, O> {
  const entries: { t: number; call: boolean; e: Entry<I, O> }[] = [];
  ops.forEach((op, index) => {
    const c: Entry<I, O> = { call: true, op, index };
    const r: Entry<I, O> = { call: false, op, index };
    c.match = r;
    entries.push({ t: op.call, call: true, e: c }, { t: op.ret, call: false, e: r });
  });
  // Calls before returns at equal times: two operations stamped alike are concurrent.
  entries.sort((a, b) => (a.t === b.t ? (a.call === b.call ? 0 : a.call ? -1 : 1) : a.t - b.t));
  const head: Entry<I, O> = { call: false, op: undefined as never, index: -1 };
  let prev = head;
  for (const { e } of entries) {
    prev.next = e;
    e.prev = prev;
    prev = e;
  }
  return head;
}

function lift<I, O>(e: Entry<I, O>): void {
  e.prev!.next = e.next;
  if (e.next) e.next.prev = e.prev;
  const m = e.match!;
  m.prev!.next = m.next;
  if (m.next) m.next.prev = m.prev;
}

function unlift<I, O>(e: Entry<I, O>): void {
  const m = e.match!;
  m.prev!.next = m;
  if (m.next) m.next.prev = m;
  e.prev!.next = e;
  if (e.next) e.next.prev = e;
}

class Bits {
  readonly words: Uint32Array;
  constructor(n: number) {
    this.words = new Uint32Array(Math.ceil(n / 32) + 1);
  }
  set(i: number): void {
    this.words[i >>> 5]! |= 1 << (i & 31);
  }
  clear(i: number): void {
    this.words[i >>> 5]! &= ~(1 << (i & 31));
  }
  key(): string {
    return Array.from(this.words, (w) => w.toString(36)).join('.');
  }
}

export function checkLinearizable<S, I, O>(model: Model<S, I, O>, ops: CallRec<I, O>[], stepsMax = 2_000_000): CheckResult {
  if (ops.length === 0) return { ok: true, steps: 0 };
  const head = buildList(ops);
  const stepSet = (states: S[], op: CallRec<I, O>): S[] => {
    const out = new Map<string, S>();
    for (const s of states) for (const n of model.step(s, op.input, op.output)) out.set(model.key(n), n);
    return [...out.values()];
  };
  const setKey = (states: S[]): string => states.map((s) => model.key(s)).sort().join('||');
  let states: S[] = [model.init()];
  const linearized = new Bits(ops.length);
  const seen = new Set<string>();
  const stack: { e: Entry<I, O>; states: S[] }[] = [];
  let longest: number[] = [];
  let stuck = -1;
  let entry = head.next;
  let steps = 0;
  while (head.next !== undefined) {
    if (++steps > stepsMax) return { ok: 'unknown', steps };
    if (entry === undefined) throw new Error('linearizability search ran off the end of the history');
    if (entry.call) {
      const next = stepSet(states, entry.op);
      if (next.length > 0) {
        linearized.set(entry.index);
        const k = linearized.key() + '#' + setKey(next);
        if (!seen.has(k)) {
          seen.add(k);
          stack.push({ e: entry, states });
          states = next;
          lift(entry);
          entry = head.next;
          continue;
        }
        linearized.clear(entry.index);
      }
      entry = entry.next;
    } else {
      if (stack.length >= longest.length && stuck < 0 || stack.length > longest.length) {
        longest = stack.map((s) => s.e.op.id);
        stuck = entry.op.id;
      }
      const top = stack.pop();
      if (top === undefined) return { ok: false, steps, longest, stuck: [stuck] };
      states = top.states;
      linearized.clear(top.e.index);
      unlift(top.e);
      entry = top.e.next;
    }
  }
  return { ok: true, steps };
}
