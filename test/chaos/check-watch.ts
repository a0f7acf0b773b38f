/**
 * L4: etcd's documented watch guarantees, per session, against the reference log (the union of every
 * watcher's events and every acknowledged write):
 * - ordered: revisions increase from one response to the next, and never precede the start revision;
 * - unique: no (revision, key) twice;
 * - atomic: one revision's events are not split over responses (unless a response says `fragment`);
 * - reliable: no gap, every event of the reference log in the session's range between its start and the
 *   last revision it is known to have delivered (its last event or progress notification) arrived, equal;
 * - bookmarkable: after a progress notification at R, no event at or below R arrives;
 * - prev_kv: when asked, an update or delete carries the key's previous put exactly, a create carries none,
 *   and versions/create revisions chain from it;
 * - resumable: a resumed session is checked like any other from its own start revision.
 */
import { inRange, type WatchEvent, type WatchSession } from './history.js';
import { lastObserved, sameKv, type ReferenceLog } from './reference-log.js';

function orderAndAtomicity(s: WatchSession, out: string[]): void {
  let lastRev = 0;
  let lastFragment = false;
  let progressRev = 0;
  const seen = new Set<string>();
  for (const r of s.responses) {
    if (r.progress) {
      if (r.headerRev < lastRev) out.push(`L4 watch ${s.id}: progress notification at ${r.headerRev} after an event at ${lastRev}`);
      progressRev = Math.max(progressRev, r.headerRev);
      continue;
    }
    const first = r.events[0];
    if (first !== undefined && first.kv.modRev === lastRev && !lastFragment) {
      out.push(`L4 watch ${s.id}: revision ${lastRev} split over two responses (not atomic)`);
    }
    for (const e of r.events) {
      const rev = e.kv.modRev;
      const id = `${rev}/${e.kv.key}`;
      if (rev < s.startRev) out.push(`L4 watch ${s.id}: event at ${rev} before its start revision ${s.startRev}`);
      if (rev < lastRev) out.push(`L4 watch ${s.id}: event at ${rev} after one at ${lastRev} (not ordered)`);
      if (rev <= progressRev) out.push(`L4 watch ${s.id}: event at ${rev} after a progress notification at ${progressRev}`);
      if (seen.has(id)) out.push(`L4 watch ${s.id}: event ${id} delivered twice`);
      seen.add(id);
      lastRev = Math.max(lastRev, rev);
    }
    lastFragment = r.fragment;
  }
}

function reliability(s: WatchSession, ref: ReferenceLog, out: string[]): void {
  const got = new Map<string, WatchEvent>();
  for (const r of s.responses) for (const e of r.events) got.set(`${e.kv.modRev}/${e.kv.key}`, e);
  const upTo = lastObserved(s);
  for (const ev of ref.events(s.startRev, upTo, s.key, s.rangeEnd)) {
    const e = got.get(`${ev.rev}/${ev.key}`);
    if (e === undefined) {
      out.push(`L4 watch ${s.id} (from ${s.startRev}, delivered through ${upTo}) missed ${ev.type} ${ev.key}@${ev.rev} seen by ${ev.source}`);
    }
  }
}

function prevKvs(s: WatchSession, ref: ReferenceLog, out: string[]): void {
  for (const r of s.responses) {
    for (const e of r.events) {
      const at = `L4 watch ${s.id} event ${e.type} ${e.kv.key}@${e.kv.modRev}`;
      if (!inRange(e.kv.key, s.key, s.rangeEnd)) out.push(`${at}: key outside the watched range`);
      if (e.type === 'put' && e.prevKv === undefined && e.kv.version === 1 && e.kv.createRev !== e.kv.modRev) {
        out.push(`${at}: version 1 but create revision ${e.kv.createRev}`);
      }
      if (e.prevKv !== undefined && e.type === 'put' && (e.kv.version !== e.prevKv.version + 1 || e.kv.createRev !== e.prevKv.createRev)) {
        out.push(`${at}: version/create revision do not follow prev_kv ${JSON.stringify(e.prevKv)}`);
      }
      if (!s.prevKv) continue;
      const prev = ref.previous(e.kv.key, e.kv.modRev);
      if (prev === 'unknown') continue;
      const want = prev !== null && prev.type === 'put' ? prev : null;
      if (want === null && e.prevKv !== undefined) out.push(`${at}: prev_kv ${JSON.stringify(e.prevKv)} but the key did not exist`);
      if (want !== null && e.prevKv === undefined) out.push(`${at}: prev_kv missing (previous: ${want.value}@${want.rev})`);
      if (want !== null && e.prevKv !== undefined) {
        const ok = want.kv ? sameKv(want.kv, e.prevKv) : want.value === e.prevKv.value && want.rev === e.prevKv.modRev;
        if (!ok) out.push(`${at}: prev_kv ${e.prevKv.value}@${e.prevKv.modRev}, expected ${want.value}@${want.rev}`);
      }
    }
  }
}

/** A watch canceled as compacted must have started below the compaction, which some client asked for. */
function compactedCancels(s: WatchSession, compactRevs: number[], out: string[]): void {
  if (s.compactRev === undefined) return;
  if (s.startRev >= s.compactRev) out.push(`L4 watch ${s.id} from ${s.startRev} canceled as compacted at ${s.compactRev}`);
  if (!compactRevs.some((c) => c >= s.compactRev!)) out.push(`L4 watch ${s.id} canceled as compacted at ${s.compactRev}, but no compaction reached it`);
}

export function checkWatches(watches: WatchSession[], ref: ReferenceLog, compactRevs?: number[]): string[] {
  const out = [...ref.violations];
  for (const s of watches) {
    if (compactRevs !== undefined) compactedCancels(s, compactRevs, out);
    orderAndAtomicity(s, out);
    reliability(s, ref, out);
    prevKvs(s, ref, out);
  }
  return out;
}
