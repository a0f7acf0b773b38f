/**
 * L11: the checkers catch the bugs they exist for. The server has no switches that break it on purpose, so
 * each planted fault rewrites a recorded (real) history the way the broken server would have produced it:
 * - ack-before-fsync: an acknowledged write was lost by a crash: no watcher ever delivers it and later reads
 *   of its key return what was there before it;
 * - skip-read-index: a linearizable get served from a lagging member returns the key's previous value and
 *   an older header revision;
 * - drop-watch-event: one event is missing from one watch stream.
 * Each must make checkHistory report at least one violation; the untouched history must report none.
 */
import type { History, Kv, Op } from './history.js';
import { checkHistory } from './check.js';
import { buildReference, type RefEvent } from './reference-log.js';

export interface Corruption {
  name: string;
  /** Rewrites `h` in place; false when the history offers nothing to corrupt this way. */
  apply(h: History): boolean;
}

type AckedPut = Op & { input: { type: 'txn'; key: string; value: string; action: 'put' }; output: { type: 'txn'; succeeded: true; rev: number } };

function ackedPuts(h: History): AckedPut[] {
  return h.ops.filter((op): op is AckedPut => op.input.type === 'txn' && op.input.action === 'put' && op.output?.type === 'txn' && op.output.succeeded);
}

function asKv(ev: RefEvent | null): Kv | null {
  if (ev === null || ev.type === 'delete') return null;
  return ev.kv ?? { key: ev.key, value: ev.value, modRev: ev.rev, createRev: ev.rev, version: 1, lease: '0' };
}

/** The put with a predecessor put on its key, so "what was there before" is a value (not absence). */
function withPredecessor(h: History, puts: AckedPut[]): { w: AckedPut; before: Kv | null } | undefined {
  const ref = buildReference(h);
  for (const w of puts) {
    const prev = ref.previous(w.input.key, w.output.rev);
    if (prev === 'unknown') continue;
    const before = asKv(prev);
    if (before !== null) return { w, before };
  }
  return undefined;
}

export const corruptions: Corruption[] = [
  {
    name: 'ack-before-fsync',
    apply(h) {
      const puts = ackedPuts(h).filter((w) => h.ops.some((g) => g.input.type === 'get' && g.output?.type === 'get' && g.output.kv?.value === w.input.value));
      const found = withPredecessor(h, puts);
      if (found === undefined) return false;
      const { w, before } = found;
      for (const s of h.watches) for (const r of s.responses) r.events = r.events.filter((e) => !(e.kv.key === w.input.key && e.kv.modRev === w.output.rev));
      for (const g of h.ops) {
        const out = g.output;
        if (out?.type === 'get' && out.kv?.value === w.input.value) out.kv = before;
        if (out?.type === 'list') out.kvs = out.kvs.flatMap((kv) => (kv.value !== w.input.value ? [kv] : before ? [before] : []));
      }
      return true;
    },
  },
  {
    name: 'skip-read-index',
    apply(h) {
      const puts = ackedPuts(h).filter((w) => h.ops.some((g) => g.input.type === 'get' && g.call > w.ret! && g.output?.type === 'get' && g.output.kv?.value === w.input.value));
      const found = withPredecessor(h, puts);
      if (found === undefined) return false;
      const { w, before } = found;
      const g = h.ops.find((x) => x.input.type === 'get' && x.call > w.ret! && x.output?.type === 'get' && x.output.kv?.value === w.input.value)!;
      g.output = { type: 'get', rev: w.output.rev - 1, kv: before };
      return true;
    },
  },
  {
    name: 'drop-watch-event',
    apply(h) {
      // An event of a reflector (not the reference watcher), before the last revision it delivered.
      for (const s of h.watches) {
        if (s.key === '\0') continue;
        for (const r of s.responses) {
          const i = r.events.findIndex((e) => e.type === 'put');
          if (i >= 0 && s.responses.some((later) => later.at > r.at && (later.events.length > 0 || later.progress))) {
            r.events.splice(i, 1);
            return true;
          }
        }
      }
      return false;
    },
  },
];

export interface SelfTestResult {
  name: string;
  applied: boolean;
  caught: boolean;
  example?: string;
}

export function selfTest(h: History, finalRev: number | undefined): SelfTestResult[] {
  return corruptions.map((c) => {
    const copy = structuredClone(h);
    if (!c.apply(copy)) return { name: c.name, applied: false, caught: false };
    const r = checkHistory(copy, { finalRev });
    return { name: c.name, applied: true, caught: r.violations.length > 0, example: r.violations[0]?.split('\n')[0] };
  });
}
