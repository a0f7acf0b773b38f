/** Every checker over one history: L1 (per key + revision order), L4, L5, L6, kept leases. */
import type { History } from './history.js';
import { checkL1, type L1Options } from './check-l1.js';
import { checkLists } from './check-lists.js';
import { checkLeases } from './leases.js';
import { checkRevisions } from './check-revisions.js';
import { checkWatches } from './check-watch.js';
import { buildReference } from './reference-log.js';

export interface CheckReport {
  violations: string[];
  inconclusive: string[];
  stats: { ops: number; l1Keys: number; l1Ops: number; resolved: number; dropped: number; events: number; completeThrough: number; watches: number };
}

/** Revisions any client asked to compact to (failed calls included: they may have happened). */
function compactRevs(h: History): number[] {
  return h.ops.flatMap((op) => (op.input.type === 'compact' ? [op.input.revision] : []));
}

export function checkHistory(h: History, o: L1Options = {}): CheckReport {
  const ref = buildReference(h);
  const l1 = checkL1(h, ref, o);
  const violations = [...l1.violations, ...checkRevisions(h), ...checkWatches(h.watches, ref, compactRevs(h)), ...checkLists(h, ref), ...checkLeases(h)];
  let events = 0;
  for (const at of ref.byRev.values()) events += at.size;
  return {
    violations,
    inconclusive: l1.inconclusive,
    stats: {
      ops: h.ops.length, l1Keys: l1.keys, l1Ops: l1.ops, resolved: l1.resolved, dropped: l1.dropped,
      events, completeThrough: ref.completeThrough, watches: h.watches.length,
    },
  };
}
