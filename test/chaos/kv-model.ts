/**
 * etcd's key-value semantics for ONE key, as the workload exercises it (kube-apiserver's guarded writes and
 * linearizable gets). Linearizability is local (Herlihy–Wing), so checking each key's sub-history on its
 * own is sound for single-key operations; cross-key revision order is checked separately (check-revisions).
 *
 * State: the value (null: absent), its mod revision, and the revision of the last change. A write whose
 * outcome is unknown may have happened with a revision nobody saw: then `known` is false and `last` is only
 * a lower bound, until a read binds the revision (values are unique, so the value says which write it was).
 *
 * Worked example: create k=a (ok, rev 5) → state {v:a, mod:5, last:5}; update mod==5 → b fails with a
 * timeout → states {v:a,...} and {v:b, mod:?, last>5}; a get returning b@9 keeps only {v:b, mod:9, last:9}.
 */
import type { Kv, OpInput, OpOutput } from './history.js';
import type { Model } from './porcupine.js';

export interface KeyState {
  v: string | null;
  /** Mod revision while the key exists and `known`; 0 while absent. */
  mod: number;
  /** Revision of the last change: exact when `known`, else a strict lower bound of it. */
  last: number;
  known: boolean;
}

export type KeyInput = Extract<OpInput, { type: 'txn' } | { type: 'get' }>;
export type KeyOutput = Extract<OpOutput, { type: 'txn' } | { type: 'get' }>;

/** Does a read of `kv` agree with `s`? Returns the state with the revision bound, or undefined. */
function observe(s: KeyState, kv: Kv | null): KeyState | undefined {
  if (kv === null) return s.v === null ? s : undefined;
  if (s.v !== kv.value) return undefined;
  if (s.known) return s.mod === kv.modRev ? s : undefined;
  return kv.modRev > s.last ? { v: s.v, mod: kv.modRev, last: kv.modRev, known: true } : undefined;
}

/** Whether mod_revision(key) == cmp holds: true, false, or both possible (unknown revision). */
function holds(s: KeyState, cmp: number): boolean[] {
  if (s.v === null) return [cmp === 0];
  if (s.known) return [s.mod === cmp];
  return cmp > s.last ? [true, false] : [false];
}

function applied(s: KeyState, input: Extract<KeyInput, { type: 'txn' }>, rev: number | undefined): KeyState {
  const v = input.action === 'put' ? input.value : null;
  if (rev === undefined) return { v, mod: 0, last: s.last, known: false };
  return { v, mod: v === null ? 0 : rev, last: rev, known: true };
}

export const kvModel: Model<KeyState, KeyInput, KeyOutput> = {
  init: () => ({ v: null, mod: 0, last: 0, known: true }),
  key: (s) => `${s.v ?? '∅'}|${s.mod}|${s.last}|${s.known ? 1 : 0}`,
  step(s, input, output) {
    if (input.type === 'get') {
      if (output === undefined || output.type !== 'get') return [];
      const n = observe(s, output.kv);
      return n === undefined ? [] : [n];
    }
    const out: KeyState[] = [];
    for (const h of holds(s, input.cmpModRev)) {
      if (output === undefined) {
        out.push(h ? applied(s, input, undefined) : s);
        if (h) out.push(s); // the call failed: it may also never have happened
      } else if (output.type === 'txn' && output.succeeded && h) {
        if (output.rev > s.last) out.push(applied(s, input, output.rev));
      } else if (output.type === 'txn' && !output.succeeded && !h) {
        const n = output.kv === undefined ? s : observe(s, output.kv);
        if (n !== undefined) out.push(n);
      }
    }
    return out;
  },
};
