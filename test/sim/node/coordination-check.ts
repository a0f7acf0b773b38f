/**
 * Judges what the Lock and Election clients were told (coordination.ts) against the key space the watchers
 * delivered (every key, from revision 1, checked complete and ordered by the watch checkers): each key's
 * lifetimes [create revision, delete revision) are rebuilt from the events, and
 * - lock mutual exclusion: each Lock answer at revision R names a key alive at R with no older live key under
 *   the lock's prefix, and no two holders' spans [R, deletion of their key) overlap;
 * - election leader uniqueness: at the revision a member had when it answered Campaign, the winner's key, if
 *   still alive, is the oldest live candidate; each Leader answer at revision R names the oldest live
 *   candidate at R.
 */
import type { WatchSession } from '../../chaos/history.js';
import type { ElectionWin, LeaderSeen, LockHold } from './coordination.js';

interface Lifetime {
  key: string;
  create: number;
  /** Deletion revision; undefined while alive at the end of the history. */
  del?: number;
}

export class KeyLifetimes {
  readonly #byKey = new Map<string, Lifetime[]>();
  readonly #all: Lifetime[] = [];

  constructor(watches: WatchSession[]) {
    const events = new Map<string, { rev: number; key: string; type: 'put' | 'delete'; createRev: number }>();
    for (const s of watches) {
      for (const r of s.responses) {
        for (const e of r.events) events.set(`${e.kv.modRev}/${e.kv.key}`, { rev: e.kv.modRev, key: e.kv.key, type: e.type, createRev: e.kv.createRev });
      }
    }
    for (const e of [...events.values()].sort((a, b) => a.rev - b.rev)) {
      const list = this.#byKey.get(e.key) ?? [];
      this.#byKey.set(e.key, list);
      const open = list.at(-1);
      if (e.type === 'put' && (open === undefined || open.del !== undefined)) {
        const l: Lifetime = { key: e.key, create: e.createRev };
        list.push(l);
        this.#all.push(l);
      } else if (e.type === 'delete' && open !== undefined && open.del === undefined) open.del = e.rev;
    }
  }

  /** The lifetime of `key` that covers revision `rev`, if the key was alive then. */
  at(key: string, rev: number): Lifetime | undefined {
    return this.#byKey.get(key)?.find((l) => l.create <= rev && (l.del === undefined || l.del > rev));
  }

  /** The live key under `prefix` with the lowest create revision at `rev`. */
  oldest(prefix: string, rev: number): Lifetime | undefined {
    let best: Lifetime | undefined;
    for (const l of this.#all) {
      if (!l.key.startsWith(prefix) || l.create > rev || (l.del !== undefined && l.del <= rev)) continue;
      if (best === undefined || l.create < best.create) best = l;
    }
    return best;
  }
}

function describe(l: Lifetime | undefined): string {
  return l === undefined ? 'none' : `${l.key} (created ${l.create}, ${l.del === undefined ? 'never deleted' : `deleted at ${l.del}`})`;
}

export function checkLocks(holds: LockHold[], keys: KeyLifetimes): string[] {
  const out: string[] = [];
  const spans = new Map<string, { h: LockHold; from: number; to: number }[]>();
  for (const h of holds) {
    const mine = keys.at(h.key, h.rev);
    const oldest = keys.oldest(`${h.name}/`, h.rev);
    if (mine === undefined || oldest !== mine) {
      out.push(`lock ${h.name}: c${h.client} was told it holds it as ${h.key} at revision ${h.rev} (${h.member}), but then its key is ${describe(mine)} and the oldest contender ${describe(oldest)}`);
      continue;
    }
    const list = spans.get(h.name) ?? [];
    spans.set(h.name, list);
    list.push({ h, from: h.rev, to: mine.del ?? Number.POSITIVE_INFINITY });
  }
  for (const [name, list] of spans) {
    list.sort((a, b) => a.from - b.from);
    for (let i = 1; i < list.length; i++) {
      const a = list[i - 1]!;
      const b = list[i]!;
      if (a.h.key !== b.h.key && b.from < a.to) {
        out.push(`lock ${name}: two holders at once: c${a.h.client} as ${a.h.key} from revision ${a.from} to ${a.to}, c${b.h.client} as ${b.h.key} from ${b.from}`);
      }
    }
  }
  return out;
}

export function checkElections(wins: ElectionWin[], seen: LeaderSeen[], keys: KeyLifetimes): string[] {
  const out: string[] = [];
  for (const w of wins) {
    const mine = keys.at(w.key, w.rev);
    if (mine === undefined || mine.create !== w.createRev) continue; // its session expired while it waited
    const oldest = keys.oldest(`${w.name}/`, w.rev);
    if (oldest !== mine) {
      out.push(`election ${w.name}: c${w.client} won as ${w.key} (created ${w.createRev}) on ${w.member} at revision ${w.rev}, but then the oldest candidate was ${describe(oldest)}: two leaders`);
    }
  }
  for (const s of seen) {
    const oldest = keys.oldest(`${s.name}/`, s.rev);
    if (oldest === undefined || oldest.key !== s.key || oldest.create !== s.createRev) {
      out.push(`election ${s.name}: Leader on ${s.member} answered ${s.key} (created ${s.createRev}) at revision ${s.rev}, but the oldest candidate then was ${describe(oldest)}`);
    }
  }
  return out;
}
