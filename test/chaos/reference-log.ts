/**
 * The "final history" of the key space: every event (revision, key) as observed by any watch session or
 * produced by any acknowledged write, merged. Two sources that disagree about one (revision, key), or one
 * written value that appears at two places, are violations on their own. Full-range watch sessions
 * (key '\0', rangeEnd '\0') also tell which revisions are covered completely, so the state of the whole key
 * space can be rebuilt at any revision in [1, completeThrough].
 */
import { inRange, type History, type Kv, type WatchSession } from './history.js';

export interface RefEvent {
  rev: number;
  key: string;
  type: 'put' | 'delete';
  value: string;
  /** The server's KeyValue when a watch reported the event (ops know only value and revision). */
  kv?: Kv;
  source: string;
}

export const fullRange = { key: '\0', rangeEnd: '\0' } as const;

/** The last revision a session is known to have delivered completely: its last event or progress notification. */
export function lastObserved(s: WatchSession): number {
  let last = s.startRev - 1;
  for (const r of s.responses) {
    if (r.progress) last = Math.max(last, r.headerRev);
    for (const e of r.events) last = Math.max(last, e.kv.modRev);
  }
  return last;
}

export class ReferenceLog {
  readonly byRev = new Map<number, Map<string, RefEvent>>();
  readonly putByValue = new Map<string, RefEvent>();
  readonly violations: string[] = [];
  /** Every event with revision ≤ completeThrough is in the log (0: nothing known). */
  completeThrough = 0;
  maxRev = 0;

  add(ev: RefEvent): void {
    let at = this.byRev.get(ev.rev);
    if (at === undefined) this.byRev.set(ev.rev, (at = new Map()));
    this.maxRev = Math.max(this.maxRev, ev.rev);
    const had = at.get(ev.key);
    if (had !== undefined) {
      if (had.type !== ev.type || had.value !== ev.value || (had.kv && ev.kv && !sameKv(had.kv, ev.kv))) {
        this.violations.push(`L4 disagreement at rev ${ev.rev} key ${ev.key}: ${describe(had)} vs ${describe(ev)}`);
      }
      if (had.kv === undefined && ev.kv !== undefined) had.kv = ev.kv;
      return;
    }
    at.set(ev.key, ev);
    // An empty value marks no write (etcd's Lock recipe puts its key with one): only non-empty values are unique.
    if (ev.type === 'put' && ev.value !== '') {
      const other = this.putByValue.get(ev.value);
      if (other !== undefined && (other.rev !== ev.rev || other.key !== ev.key)) {
        this.violations.push(`value ${ev.value} written twice: ${describe(other)} and ${describe(ev)}`);
      } else this.putByValue.set(ev.value, ev);
    }
  }

  /** Events on keys in [key, rangeEnd) with revisions in [from, to], in revision order. */
  events(from: number, to: number, key: string, rangeEnd: string): RefEvent[] {
    const out: RefEvent[] = [];
    for (const rev of [...this.byRev.keys()].filter((r) => r >= from && r <= to).sort((a, b) => a - b)) {
      for (const ev of this.byRev.get(rev)!.values()) if (inRange(ev.key, key, rangeEnd)) out.push(ev);
    }
    return out;
  }

  /** The latest event on `key` strictly before `rev`, if the log is complete up to there. */
  previous(key: string, rev: number): RefEvent | null | 'unknown' {
    if (rev - 1 > this.completeThrough) return 'unknown';
    for (let r = rev - 1; r >= 1; r--) {
      const ev = this.byRev.get(r)?.get(key);
      if (ev !== undefined) return ev;
    }
    return null;
  }

  /**
   * The key space at each requested revision (all ≤ completeThrough), built in one sweep. Keys map to the put
   * event that set them.
   */
  statesAt(revs: number[]): Map<number, Map<string, RefEvent>> {
    const wanted = [...new Set(revs)].sort((a, b) => a - b);
    const out = new Map<number, Map<string, RefEvent>>();
    const state = new Map<string, RefEvent>();
    const all = [...this.byRev.keys()].sort((a, b) => a - b);
    let i = 0;
    for (const rev of wanted) {
      for (; i < all.length && all[i]! <= rev; i++) {
        for (const ev of this.byRev.get(all[i]!)!.values()) {
          if (ev.type === 'put') state.set(ev.key, ev);
          else state.delete(ev.key);
        }
      }
      out.set(rev, new Map(state));
    }
    return out;
  }
}

export function sameKv(a: Kv, b: Kv): boolean {
  return a.key === b.key && a.value === b.value && a.modRev === b.modRev && a.createRev === b.createRev && a.version === b.version && a.lease === b.lease;
}

function describe(ev: RefEvent): string {
  return `${ev.type} ${ev.key}=${ev.value}@${ev.rev} (${ev.source})`;
}

/** Coverage of the whole key space: the longest [1, n] covered by full-range sessions. */
function completeThrough(watches: WatchSession[]): number {
  const spans = watches
    .filter((s) => s.key === fullRange.key && s.rangeEnd === fullRange.rangeEnd)
    .map((s) => [s.startRev, lastObserved(s)] as const)
    .filter(([a, b]) => b >= a)
    .sort((x, y) => x[0] - y[0]);
  let through = 0;
  for (const [a, b] of spans) if (a <= through + 1) through = Math.max(through, b);
  return through;
}

export function buildReference(h: History): ReferenceLog {
  const log = new ReferenceLog();
  for (const s of h.watches) {
    for (const r of s.responses) {
      for (const e of r.events) {
        log.add({ rev: e.kv.modRev, key: e.kv.key, type: e.type, value: e.type === 'put' ? e.kv.value : '', kv: e.type === 'put' ? e.kv : undefined, source: `watch ${s.id}` });
      }
    }
  }
  for (const op of h.ops) {
    const out = op.output;
    if (op.input.type === 'txn' && out?.type === 'txn' && out.succeeded) {
      const type = op.input.action;
      log.add({ rev: out.rev, key: op.input.key, type, value: type === 'put' ? op.input.value : '', source: `op ${op.id}` });
    } else if (op.input.type === 'leasePut' && out?.type === 'put') {
      log.add({ rev: out.rev, key: op.input.key, type: 'put', value: op.input.value, source: `op ${op.id}` });
    }
  }
  log.completeThrough = completeThrough(h.watches);
  return log;
}
