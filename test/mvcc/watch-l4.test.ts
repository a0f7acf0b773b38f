/**
 * L4: etcd's documented watch guarantees under seeded random interleavings of writes, compactions, watchers at
 * random start revisions, slow consumers, cancels, progress requests and stream closes. Every stream's
 * responses are logged as a client sees them and checked against the store's full history:
 * ordered, unique, reliable (no gap), atomic (a revision never split), resumable (any start revision after the
 * compaction works), prevKv and filters exact, created first, header revisions non-decreasing, and progress
 * notifications truthful (every event at or below the bookmark already delivered).
 * Half the seeds run on the fake store, half on the real KvStore. Wider sweeps:
 * WATCH_L4_SEEDS=3000 WATCH_L4_STEPS=3000 npx vitest run test/mvcc/watch-l4.test.ts
 */
import { describe, expect, it } from 'vitest';
import { Prng, compareBytes, fromUtf8, utf8 } from '../../src/base/index.js';
import { EventType, type Event } from '../../src/mvcc/types.js';
import { WatchHub } from '../../src/mvcc/watch-hub.js';
import type { WatchStream } from '../../src/mvcc/watch-stream.js';
import { watchCreateRequest, WatchFilterType, type WatchCreateRequest, type WatchResponse } from '../../src/mvcc/watch-types.js';
import { openTestStore, type FakeOp, type StoreKind, type TestStore } from './watch-fake-store.js';

const keys = ['a', 'b', 'c', 'p/1', 'p/2', 'p/3', 'q'];
const ranges: Array<[string, Uint8Array]> = [
  ['a', new Uint8Array(0)],
  ['p/2', new Uint8Array(0)],
  ['p/', utf8('p0')],
  ['b', new Uint8Array([0])],
  ['a', utf8('p/2')],
  ['', new Uint8Array([0])],
];

interface Client {
  stream: WatchStream;
  log: WatchResponse[];
  creates: WatchCreateRequest[];
  accept: boolean;
  closed: boolean;
}

/** What the seeds exercised, summed over the file; the last test asserts every path was hit. */
const coverage = { compacted: 0, canceled: 0, refused: 0, progressAll: 0, progressOne: 0, fragments: 0, victims: 0, catchUp: 0 };

interface Run {
  store: TestStore;
  clients: Client[];
  /** Every revision compacted at during the run. */
  compactions: Set<number>;
}

/**
 * A watcher that reads a compact revision from history gets what compaction kept there (etcd): no tombstone
 * at that revision, and no prevKv (it would be read below). One that got it live, before the compaction, got
 * both. So at compact revisions either form is expected: `expected` aligned with what was received.
 */
let compactions = new Set<number>();
function aligned(w: WatchRecord): string[] {
  const out: string[] = [];
  for (const e of w.expected) {
    const rev = Number(e.split(':')[0]);
    if (!compactions.has(rev)) {
      out.push(e);
      continue;
    }
    const got = w.received[out.length];
    const stripped = e.replace(/:prev@.*$/, '');
    if (got === e || got === stripped) out.push(got);
    else if (e.split(':')[1] !== 'DEL') out.push(e);
  }
  return out;
}

async function simulate(kind: StoreKind, seed: number, steps: number): Promise<Run> {
  const rng = new Prng(seed);
  const store = await openTestStore(kind);
  const hub = new WatchHub(store, {
    queueResponsesMax: 1 + rng.int(4),
    batchRevisionsMax: 1 + rng.int(5),
    responseBytesMax: 200 + rng.int(400),
    catchUpBatchesMax: 1 + rng.int(3),
  });
  const clients: Client[] = [];
  const compactionsOfRun = new Set<number>();
  const open = (): void => {
    const c: Client = { stream: undefined as unknown as WatchStream, log: [], creates: [], accept: true, closed: false };
    c.stream = hub.openStream((r) => {
      c.log.push(r);
      return c.accept;
    });
    clients.push(c);
  };
  open();
  const live = (): Client[] => clients.filter((c) => !c.closed);
  const pick = <T>(xs: T[]): T | undefined => xs[rng.int(xs.length)];
  for (let step = 0; step < steps; step++) {
    const roll = rng.int(100);
    const c = pick(live());
    const unsyncedBefore = hub.unsyncedCount;
    if (roll < 45) {
      store.write(randomOps(rng));
      if (hub.unsyncedCount > unsyncedBefore) coverage.victims++;
    }
    else if (roll < 48) {
      const at = Math.max(0, store.compactRevision) + 1 + rng.int(Math.max(1, store.revision - store.compactRevision));
      store.compact(at);
      compactionsOfRun.add(store.compactRevision);
    }
    else if (roll < 62 && c) {
      const q = randomCreate(rng, store);
      c.creates.push(q);
      c.stream.create(q);
    } else if (roll < 66 && c) c.stream.cancel(rng.int(6));
    else if (roll < 74 && c) c.accept = !c.accept;
    else if (roll < 82 && c && c.accept) c.stream.resume();
    else if (roll < 86 && c) c.stream.requestProgress();
    else if (roll < 90) hub.sync(1 + rng.int(4));
    else if (roll < 93) hub.tickProgress();
    else if (roll < 95 && c && live().length > 1) {
      c.closed = true;
      c.stream.close();
    } else if (roll < 97) open();
  }
  // Drain: every client reads again and the hub catches everyone up.
  for (const c of live()) c.accept = true;
  for (let i = 0; i < 10_000 && (hub.unsyncedCount > 0 || live().some((c) => c.stream.queuedResponses > 0)); i++) {
    for (const c of live()) c.stream.resume();
    hub.sync();
  }
  expect(hub.unsyncedCount).toBe(0);
  // Every RequestProgress was answered once its stream caught up (deferred, never dropped).
  for (const c of live()) expect(c.stream.progressRequested).toBe(false);
  return { store, clients, compactions: compactionsOfRun };
}

function randomOps(rng: Prng): FakeOp[] {
  const n = 1 + rng.int(3);
  const chosen = new Set<string>();
  while (chosen.size < n) chosen.add(keys[rng.int(keys.length)]!);
  return [...chosen].map((key) => (rng.int(4) === 0 ? { key, delete: true } : { key, value: `v${rng.int(1000)}` }));
}

function randomCreate(rng: Prng, store: TestStore): WatchCreateRequest {
  const [key, rangeEnd] = ranges[rng.int(ranges.length)]!;
  const r = rng.int(10);
  const startRevision = r < 3 ? 0 : r < 9 ? 1 + rng.int(store.revision + 2) : -1;
  const filters = [WatchFilterType.NoPut, WatchFilterType.NoDelete].filter(() => rng.int(6) === 0);
  const watchId = rng.int(3) === 0 ? 1 + rng.int(5) : 0;
  return watchCreateRequest({
    key: utf8(key),
    rangeEnd,
    startRevision,
    filters,
    watchId,
    prevKv: rng.int(2) === 0,
    fragment: rng.int(3) === 0,
    progressNotify: rng.int(2) === 0,
  });
}

function matches(q: WatchCreateRequest, key: Uint8Array): boolean {
  const k = q.key.length === 0 ? new Uint8Array([0]) : q.key;
  if (q.rangeEnd.length === 0) return compareBytes(key, k) === 0;
  if (compareBytes(key, k) < 0) return false;
  return (q.rangeEnd.length === 1 && q.rangeEnd[0] === 0) || compareBytes(key, q.rangeEnd) < 0;
}

/** The oracle's history carries every prevKv; a received event must carry one only when asked. */
function describeEvent(ev: Event, withPrev: boolean, fromOracle = false): string {
  const kv = ev.kv;
  const base = `${kv.modRevision}:${ev.type === EventType.Put ? 'PUT' : 'DEL'}:${fromUtf8(kv.key)}=${fromUtf8(kv.value)}:c${kv.createRevision}:v${kv.version}`;
  if (!withPrev) return ev.prevKv === undefined || fromOracle ? base : `${base}:UNEXPECTED-PREV`;
  return ev.prevKv === undefined ? base : `${base}:prev@${ev.prevKv.modRevision}=${fromUtf8(ev.prevKv.value)}`;
}

interface WatchRecord {
  q: WatchCreateRequest;
  expected: string[];
  received: string[];
  /** Response index per received event (after fragment reassembly), for the atomicity check. */
  responseOf: number[];
  revisions: number[];
  ended: 'open' | 'canceled' | 'compacted';
}

/** Replays one client's log in order, as a client would, and checks every guarantee; throws on the first violation. */
function checkClient(c: Client, history: readonly Event[], streamOpen: boolean): void {
  const watches = new Map<number, WatchRecord>();
  /** Ids canceled for compaction and not yet canceled by the client (their id stays taken meanwhile). */
  const compactedIds = new Set<number>();
  let createIndex = 0;
  let headerRevision = 0;
  let logical = 0;
  let fragmentOpen = false;
  for (const r of c.log) {
    if (r.revision < headerRevision) throw new Error(`header revision went back ${headerRevision} -> ${r.revision}`);
    headerRevision = r.revision;
    if (r.created) {
      const q = c.creates[createIndex++]!;
      if (r.canceled) {
        coverage.refused++;
        continue;
      }
      if (q.startRevision > 0 && q.startRevision <= r.revision) coverage.catchUp++;
      if (watches.has(r.watchId)) throw new Error(`watch id ${r.watchId} created twice while alive`);
      const start = q.startRevision === 0 ? r.revision + 1 : q.startRevision;
      const expected = history
        .filter((ev) => ev.kv.modRevision >= start && matches(q, ev.kv.key))
        .filter((ev) => !(ev.type === EventType.Put ? q.filters.includes(WatchFilterType.NoPut) : q.filters.includes(WatchFilterType.NoDelete)))
        .map((ev) => describeEvent(ev, q.prevKv, true));
      watches.set(r.watchId, { q, expected, received: [], responseOf: [], revisions: [], ended: 'open' });
      continue;
    }
    if (r.watchId === -1) {
      coverage.progressAll++;
      for (const [id, w] of watches) checkBookmark(w, r.revision, `progress(-1) on watch ${id}`);
      continue;
    }
    const w = watches.get(r.watchId);
    // etcd keeps a watcher canceled for compaction until the client cancels it: that cancel is answered once.
    if (w === undefined && r.canceled && r.compactRevision === 0 && compactedIds.delete(r.watchId)) continue;
    if (w === undefined) throw new Error(`response for watch ${r.watchId} that is not alive: ${JSON.stringify({ ...r, events: r.events.length })}`);
    if (r.canceled) {
      watches.delete(r.watchId);
      if (r.compactRevision > 0) compactedIds.add(r.watchId);
      coverage[r.compactRevision > 0 ? 'compacted' : 'canceled']++;
      finish(w, r.compactRevision > 0 ? 'compacted' : 'canceled', r.compactRevision);
      continue;
    }
    if (r.events.length === 0) {
      coverage.progressOne++;
      checkBookmark(w, r.revision, `progress on watch ${r.watchId}`);
      continue;
    }
    if (!fragmentOpen) logical++;
    fragmentOpen = r.fragment;
    if (r.fragment) coverage.fragments++;
    for (const ev of r.events) {
      if (ev.kv.modRevision > r.revision) throw new Error(`event at ${ev.kv.modRevision} in a response at ${r.revision}`);
      w.received.push(describeEvent(ev, w.q.prevKv));
      w.responseOf.push(logical);
      w.revisions.push(ev.kv.modRevision);
    }
    checkPrefix(w, `watch ${r.watchId}`);
  }
  for (const [id, w] of watches) {
    const expected = aligned(w);
    if (streamOpen && w.received.length !== expected.length) {
      throw new Error(`watch ${id}: ${w.received.length} of ${expected.length} events delivered (reliable)`);
    }
    checkAtomic(w, `watch ${id}`);
  }
}

function checkPrefix(w: WatchRecord, what: string): void {
  const i = w.received.length - 1;
  const expected = aligned(w);
  for (let j = Math.max(0, i - 50); j <= i; j++) {
    if (w.received[j] !== expected[j]) {
      throw new Error(`${what}: event #${j} is ${w.received[j]}, expected ${expected[j]} (ordered/unique/no gap/prevKv/filters)`);
    }
  }
}

function checkBookmark(w: WatchRecord, revision: number, what: string): void {
  const due = aligned(w).filter((e) => Number(e.split(':')[0]) <= revision).length;
  if (w.received.length < due) throw new Error(`${what} at ${revision} before ${due - w.received.length} event(s) at or below it`);
}

function checkAtomic(w: WatchRecord, what: string): void {
  const seen = new Map<number, number>();
  for (let i = 0; i < w.revisions.length; i++) {
    const rev = w.revisions[i]!;
    const resp = w.responseOf[i]!;
    const first = seen.get(rev);
    if (first !== undefined && first !== resp) throw new Error(`${what}: revision ${rev} split across responses (atomic)`);
    seen.set(rev, resp);
  }
}

function finish(w: WatchRecord, how: 'canceled' | 'compacted', compactRevision: number): void {
  w.ended = how;
  checkAtomic(w, 'ended watch');
  if (how === 'compacted') {
    const last = w.revisions.at(-1) ?? 0;
    // Compacted means its next revision is below the compact revision (the state at it is kept, as etcd).
    if (last + 1 >= compactRevision) throw new Error(`canceled as compacted at ${compactRevision} although it had reached ${last}`);
  }
}

describe('watch L4 guarantees under random interleavings', () => {
  const cases = Array.from({ length: Number(process.env.WATCH_L4_SEEDS ?? 200) }, (_, i) => [i % 2 === 0 ? 'fake' : 'kv', 1000 + i] as const);
  it.each(cases)('%s store, seed %i: ordered, unique, reliable, atomic, resumable, prevKv, filters, progress', async (kind, seed) => {
    const run = await simulate(kind, seed, Number(process.env.WATCH_L4_STEPS ?? 400));
    try {
      compactions = run.compactions;
      for (const c of run.clients) checkClient(c, run.store.allEvents(), !c.closed);
    } catch (err) {
      throw new Error(`seed ${seed}: ${(err as Error).message}`);
    }
    expect(run.clients.reduce((n, c) => n + c.log.length, 0)).toBeGreaterThan(0);
  });

  it('the seeds exercised every path (victims, catch-up, compaction, cancels, refusals, progress, fragments)', () => {
    for (const [path, n] of Object.entries(coverage)) expect(n, path).toBeGreaterThan(0);
  });

  it('the checker catches a dropped event, a duplicate and a split revision (self-test)', async () => {
    const run = await simulate('kv', 7, 400);
    const victim = run.clients.find((c) => c.log.some((r) => !r.created && r.events.length > 1 && !r.canceled));
    expect(victim).toBeDefined();
    const idx = victim!.log.findIndex((r) => !r.created && r.events.length > 1 && !r.canceled);
    const original = victim!.log[idx]!;
    compactions = run.compactions;
    const check = () => checkClient(victim!, run.store.allEvents(), !victim!.closed);
    expect(check).not.toThrow();
    victim!.log[idx] = { ...original, events: original.events.slice(1) };
    expect(check).toThrow();
    victim!.log[idx] = { ...original, events: [original.events[0]!, ...original.events] };
    expect(check).toThrow();
    const rev = original.events[0]!.kv.modRevision;
    const sameRev = original.events.filter((e) => e.kv.modRevision === rev);
    if (sameRev.length > 1) {
      victim!.log.splice(idx, 1, { ...original, fragment: false, events: [sameRev[0]!] }, { ...original, fragment: false, events: original.events.slice(1) });
      expect(check).toThrow(/atomic/);
    }
  });
});
