import { beforeEach, describe, expect, it } from 'vitest';
import { fromUtf8, utf8 } from '../../src/base/index.js';
import { EventType } from '../../src/mvcc/types.js';
import { WatchHub, type WatchHubOptions } from '../../src/mvcc/watch-hub.js';
import {
  invalidWatchId,
  watchCancelReasons,
  watchCreateRequest,
  WatchFilterType,
  type WatchCreateRequest,
  type WatchResponse,
} from '../../src/mvcc/watch-types.js';
import { openTestStore, type StoreKind } from './watch-fake-store.js';

/** A transport double: records responses; `accept=false` makes send push back like a full socket. */
function transport() {
  const t = { responses: [] as WatchResponse[], accept: true };
  const send = (r: WatchResponse): boolean => {
    t.responses.push(r);
    return t.accept;
  };
  return Object.assign(t, { send });
}

let kind: StoreKind = 'fake';

async function setup(options: WatchHubOptions = {}) {
  const store = await openTestStore(kind);
  const hub = new WatchHub(store, options);
  const t = transport();
  const stream = hub.openStream(t.send);
  return { store, hub, t, stream };
}

function req(key: string, fields: Partial<WatchCreateRequest> = {}): WatchCreateRequest {
  return watchCreateRequest({ key: utf8(key), ...fields });
}

/** [watchId, revision, "PUT k=v" | "DELETE k"] per event. */
function eventsOf(responses: WatchResponse[]): string[] {
  return responses.flatMap((r) =>
    r.events.map((e) => `${r.watchId}@${e.kv.modRevision} ${e.type === EventType.Put ? `PUT ${fromUtf8(e.kv.key)}=${fromUtf8(e.kv.value)}` : `DELETE ${fromUtf8(e.kv.key)}`}`),
  );
}

describe.each(['fake', 'kv'] as const)('on the %s store', (k) => {
  beforeEach(() => {
    kind = k;
  });

  describe('watch create', () => {
    it('survives a stream closed while its created response is sent (the client went away): fuzz case 2286275534', async () => {
      // The transport's send closes the stream re-entrantly, before the watcher is registered with the hub.
      for (const startRevision of [0, 1, 5]) {
        const store = await openTestStore(kind);
        const hub = new WatchHub(store, {});
        store.put('a', '1');
        let closeOnSend = true;
        const stream = hub.openStream(() => {
          if (closeOnSend) {
            closeOnSend = false;
            stream.close();
          }
          return true;
        });
        expect(() => stream.create(req('a', { startRevision }))).not.toThrow();
        expect(stream.closed).toBe(true);
        expect(hub.unsyncedCount).toBe(0);
        // The hub holds nothing of it: a later write notifies nobody, and a new stream works.
        store.put('a', '2');
        const t = transport();
        hub.openStream(t.send).create(req('a', { startRevision: 1 }));
        expect(eventsOf(t.responses)).toEqual(['0@2 PUT a=1', '0@3 PUT a=2']);
      }
    });

    it('answers created=true with auto ids 0, 1, … and the current revision', async () => {
      const { store, t, stream } = await setup();
      store.put('a', '1');
      stream.create(req('a'));
      stream.create(req('b'));
      expect(t.responses.map((r) => [r.watchId, r.created, r.canceled, r.revision])).toEqual([
        [0, true, false, 2],
        [1, true, false, 2],
      ]);
    });

    it('honours a client-chosen id, skips it when assigning, and refuses a duplicate like etcd 3.5', async () => {
      const { t, stream } = await setup();
      stream.create(req('a', { watchId: 1 }));
      stream.create(req('b'));
      stream.create(req('c'));
      stream.create(req('d', { watchId: 1 }));
      expect(t.responses.map((r) => r.watchId)).toEqual([1, 0, 2, invalidWatchId]);
      const refused = t.responses[3]!;
      expect(refused).toMatchObject({ created: true, canceled: true, cancelReason: watchCancelReasons.duplicateId });
    });

    it('refuses a negative start revision and an empty range with created+canceled and watchId -1', async () => {
      const { t, stream } = await setup();
      stream.create(req('a', { startRevision: -1 }));
      stream.create(req('b', { rangeEnd: utf8('a') }));
      stream.create(req('b', { rangeEnd: utf8('b') }));
      expect(t.responses.map((r) => [r.watchId, r.created, r.canceled, r.cancelReason])).toEqual([
        [-1, true, true, watchCancelReasons.compacted],
        [-1, true, true, watchCancelReasons.emptyRange],
        [-1, true, true, watchCancelReasons.emptyRange],
      ]);
    });
  });

  describe('watch ranges and start revisions', () => {
    it('start revision 0 sees only later writes, on its key, prefix or from-key range', async () => {
      const { store, t, stream } = await setup();
      store.put('a', 'old');
      stream.create(req('a'));
      stream.create(req('p/', { rangeEnd: utf8('p0') }));
      stream.create(req('m', { rangeEnd: new Uint8Array([0]) }));
      stream.create(req('', { rangeEnd: new Uint8Array([0]) }));
      store.put('a', 'x');
      store.put('p/1', 'y');
      store.put('b', 'z');
      expect(eventsOf(t.responses)).toEqual(['0@3 PUT a=x', '3@3 PUT a=x', '1@4 PUT p/1=y', '2@4 PUT p/1=y', '3@4 PUT p/1=y', '3@5 PUT b=z']);
    });

    it('an old start revision replays history in order, then continues live with no gap or duplicate', async () => {
      const { store, t, stream } = await setup();
      for (let i = 0; i < 5; i++) store.put(`k${i}`, `${i}`);
      stream.create(req('k', { rangeEnd: utf8('l'), startRevision: 3 }));
      store.put('k9', '9');
      expect(eventsOf(t.responses)).toEqual(['0@3 PUT k1=1', '0@4 PUT k2=2', '0@5 PUT k3=3', '0@6 PUT k4=4', '0@7 PUT k9=9']);
    });

    it('a future start revision waits for it', async () => {
      const { store, t, stream } = await setup();
      stream.create(req('a', { startRevision: 3 }));
      store.put('a', '1');
      store.put('a', '2');
      store.put('a', '3');
      expect(eventsOf(t.responses)).toEqual(['0@3 PUT a=2', '0@4 PUT a=3']);
    });

    it('never splits one revision across responses', async () => {
      const { store, t, stream } = await setup();
      stream.create(req('k', { rangeEnd: utf8('l') }));
      store.write([{ key: 'k1', value: 'a' }, { key: 'x', value: 'b' }, { key: 'k2', value: 'c' }]);
      const events = t.responses.filter((r) => r.events.length > 0);
      expect(events).toHaveLength(1);
      expect(events[0]!.events.map((e) => fromUtf8(e.kv.key))).toEqual(['k1', 'k2']);
      expect(events[0]!.revision).toBe(2);
    });

    it('catch-up responses hold at most batchRevisionsMax whole revisions and carry the current revision', async () => {
      const { store, t, stream } = await setup({ batchRevisionsMax: 2 });
      for (let i = 0; i < 3; i++) store.write([{ key: `k${i}a`, value: 'v' }, { key: `k${i}b`, value: 'v' }]);
      stream.create(req('k', { rangeEnd: utf8('l'), startRevision: 2 }));
      const events = t.responses.filter((r) => r.events.length > 0);
      expect(events.map((r) => [r.revision, r.events.map((e) => e.kv.modRevision)])).toEqual([
        [4, [2, 2, 3, 3]],
        [4, [4, 4]],
      ]);
    });
  });

  describe('watch prevKv and filters', () => {
    it('sends prevKv only when asked, and never for a create', async () => {
      const { store, t, stream } = await setup();
      stream.create(req('a', { prevKv: true }));
      stream.create(req('a'));
      store.put('a', '1');
      store.put('a', '2');
      store.del('a');
      const prev = (id: number) =>
        t.responses.filter((r) => r.watchId === id).flatMap((r) => r.events.map((e) => (e.prevKv ? fromUtf8(e.prevKv.value) : null)));
      expect(prev(0)).toEqual([null, '1', '2']);
      expect(prev(1)).toEqual([null, null, null]);
    });

    it('NOPUT and NODELETE drop their events, and a fully filtered revision sends nothing', async () => {
      const { store, t, stream } = await setup();
      stream.create(req('a', { filters: [WatchFilterType.NoPut] }));
      stream.create(req('a', { filters: [WatchFilterType.NoDelete] }));
      store.put('a', '1');
      store.del('a');
      expect(eventsOf(t.responses)).toEqual(['1@2 PUT a=1', '0@3 DELETE a']);
      expect(t.responses.filter((r) => !r.created)).toHaveLength(2);
    });
  });

  describe('watch cancel and compaction', () => {
    it('cancel of a known id answers canceled and stops events; an unknown id answers nothing', async () => {
      const { store, t, stream } = await setup();
      stream.create(req('a'));
      expect(stream.cancel(0)).toBe(true);
      expect(stream.cancel(7)).toBe(false);
      store.put('a', '1');
      expect(t.responses.map((r) => [r.watchId, r.created, r.canceled, r.events.length])).toEqual([
        [0, true, false, 0],
        [0, false, true, 0],
      ]);
    });

    it('a start revision below the compact revision is created, then canceled with compactRevision', async () => {
      const { store, t, stream } = await setup();
      for (let i = 0; i < 4; i++) store.put('a', `${i}`);
      store.compact(3);
      stream.create(req('a', { startRevision: 2 }));
      stream.create(req('a', { startRevision: 4 }));
      expect(t.responses.map((r) => [r.watchId, r.created, r.canceled, r.compactRevision, r.cancelReason])).toEqual([
        [0, true, false, 0, ''],
        [0, false, true, 3, watchCancelReasons.compacted],
        [1, true, false, 0, ''],
        [1, false, false, 0, ''],
      ]);
      expect(eventsOf(t.responses)).toEqual(['1@4 PUT a=2', '1@5 PUT a=3']);
    });

    // etcd keeps a watcher canceled for compaction in its stream until the client cancels it (found by the
    // server differential test, issue 35): the cancel is answered, and the id is not handed out again meanwhile.
    it('a watcher canceled for compaction keeps its id until the client cancels it, and that cancel is answered', async () => {
      const { store, t, stream } = await setup();
      for (let i = 0; i < 4; i++) store.put('a', `${i}`);
      store.compact(4);
      stream.create(req('a', { startRevision: 2 }));
      stream.create(req('a'));
      expect(stream.cancel(0)).toBe(true);
      stream.create(req('a'));
      expect(t.responses.map((r) => [r.watchId, r.created, r.canceled, r.compactRevision])).toEqual([
        [0, true, false, 0],
        [0, false, true, 4],
        [1, true, false, 0],
        [0, false, true, 0],
        [2, true, false, 0],
      ]);
    });

    // etcd 3.4's chooseAll cancels only when minRev < compactRev: the compact revision's state is kept, so a
    // watch starting exactly there streams it (python-etcd3's suite checks this; issue 35).
    it('a start revision exactly at the compact revision streams the events kept at it, then the later ones', async () => {
      const { store, t, stream } = await setup();
      for (let i = 0; i < 4; i++) store.put('a', `${i}`);
      store.compact(3);
      stream.create(req('a', { startRevision: 3, prevKv: true }));
      expect(t.responses.map((r) => [r.watchId, r.created, r.canceled, r.compactRevision])).toEqual([
        [0, true, false, 0],
        [0, false, false, 0],
      ]);
      expect(eventsOf(t.responses)).toEqual(['0@3 PUT a=1', '0@4 PUT a=2', '0@5 PUT a=3']);
      // prevKv of the event at the compact revision would be read below it: etcd leaves it out (the fake store
      // keeps every prevKv, compaction or not).
      if (kind === 'kv') expect(t.responses[1]!.events.map((e) => e.prevKv?.modRevision)).toEqual([undefined, 3, 4]);
    });
  });

  describe('watch fragments', () => {
    it('splits a large revision only for fragment=true watchers, marking all pieces but the last', async () => {
      const { store, t, stream } = await setup({ responseBytesMax: 300 });
      stream.create(req('k', { rangeEnd: utf8('l'), fragment: true }));
      stream.create(req('k', { rangeEnd: utf8('l') }));
      const ops = Array.from({ length: 6 }, (_, i) => ({ key: `k${i}`, value: 'x'.repeat(60) }));
      store.write(ops);
      const frag = t.responses.filter((r) => r.watchId === 0 && !r.created);
      expect(frag.length).toBeGreaterThan(1);
      expect(frag.map((r) => r.fragment)).toEqual([...Array(frag.length - 1).fill(true), false]);
      expect(frag.flatMap((r) => r.events).length).toBe(6);
      expect(t.responses.filter((r) => r.watchId === 1 && !r.created)).toHaveLength(1);
    });
  });

  describe('watch slow consumers', () => {
    it('a full stream turns its watchers into victims without blocking others, then catches them up in order', async () => {
      const { store, hub, t, stream } = await setup({ queueResponsesMax: 2 });
      const fast = transport();
      hub.openStream(fast.send).create(req('k', { rangeEnd: utf8('l') }));
      stream.create(req('k', { rangeEnd: utf8('l') }));
      t.accept = false;
      for (let i = 0; i < 10; i++) store.put(`k${i}`, `${i}`);
      expect(eventsOf(fast.responses)).toHaveLength(10);
      expect(stream.queuedResponses).toBe(2);
      expect(hub.unsyncedCount).toBe(1);
      t.accept = true;
      stream.resume();
      expect(eventsOf(t.responses)).toEqual(eventsOf(fast.responses));
      expect(hub.unsyncedCount).toBe(0);
      store.put('k', 'live');
      expect(eventsOf(t.responses).at(-1)).toBe('0@12 PUT k=live');
    });

    it('a victim whose next revision is compacted while it is slow is canceled with compactRevision', async () => {
      const { store, hub, t, stream } = await setup({ queueResponsesMax: 1 });
      stream.create(req('a'));
      t.accept = false;
      store.put('a', '1');
      store.put('a', '2');
      store.put('a', '3');
      store.put('a', '4');
      // The victim needs revision 4 next (2 and 3 went out or were queued): compacting at 5 leaves it below.
      store.compact(5);
      t.accept = true;
      stream.resume();
      const last = t.responses.at(-1)!;
      expect(last).toMatchObject({ watchId: 0, canceled: true, compactRevision: 5, cancelReason: watchCancelReasons.compacted });
      expect(hub.unsyncedCount + hub.syncedCount).toBe(0);
    });

    it('catch-up beyond the per-call budget is finished by sync()', async () => {
      const { store, hub, t, stream } = await setup({ batchRevisionsMax: 1, catchUpBatchesMax: 2 });
      for (let i = 0; i < 6; i++) store.put('a', `${i}`);
      stream.create(req('a', { startRevision: 2 }));
      expect(eventsOf(t.responses)).toHaveLength(2);
      expect(hub.sync(100)).toBe(0);
      expect(eventsOf(t.responses).map((e) => e.split(' ')[0])).toEqual(['0@2', '0@3', '0@4', '0@5', '0@6', '0@7']);
    });
  });

  describe('watch progress', () => {
    it('RequestProgress answers watchId -1 with the revision at once when every watcher is synced', async () => {
      const { store, t, stream } = await setup();
      stream.requestProgress();
      expect(t.responses).toHaveLength(0);
      stream.create(req('a'));
      store.put('b', '1');
      stream.requestProgress();
      expect(t.responses.at(-1)).toMatchObject({ watchId: -1, revision: 2, events: [], created: false, canceled: false });
    });

    it('RequestProgress waits until a lagging watcher has caught up (etcd #15220)', async () => {
      const { store, t, stream } = await setup({ queueResponsesMax: 1 });
      stream.create(req('a'));
      t.accept = false;
      store.put('a', '1');
      store.put('a', '2');
      store.put('a', '3');
      stream.requestProgress();
      expect(t.responses.some((r) => r.watchId === -1)).toBe(false);
      t.accept = true;
      stream.resume();
      const last = t.responses.at(-1)!;
      expect(last).toMatchObject({ watchId: -1, revision: 4 });
      expect(eventsOf(t.responses).map((e) => e.split(' ')[0])).toEqual(['0@2', '0@3', '0@4']);
    });

    it('RequestProgress waits for a future start revision to be reached', async () => {
      const { store, t, stream } = await setup();
      stream.create(req('a', { startRevision: 3 }));
      stream.requestProgress();
      store.put('b', '1');
      expect(t.responses.some((r) => r.watchId === -1)).toBe(false);
      store.put('b', '2');
      expect(t.responses.at(-1)).toMatchObject({ watchId: -1, revision: 3 });
    });

    it('tickProgress bookmarks progressNotify watchers with no events since the last tick', async () => {
      const { store, hub, t, stream } = await setup();
      stream.create(req('a', { progressNotify: true }));
      stream.create(req('b'));
      hub.tickProgress();
      store.put('a', '1');
      hub.tickProgress();
      store.put('c', '1');
      hub.tickProgress();
      const notes = t.responses.filter((r) => !r.created && r.events.length === 0);
      expect(notes.map((r) => [r.watchId, r.revision])).toEqual([
        [0, 1],
        [0, 3],
      ]);
    });
  });

  describe('watch stream close', () => {
    it('stops all delivery and removes its watchers from the hub', async () => {
      const { store, hub, t, stream } = await setup();
      stream.create(req('a'));
      stream.create(req('a', { startRevision: 1 }));
      stream.close();
      store.put('a', '1');
      expect(t.responses).toHaveLength(2);
      expect(hub.syncedCount + hub.unsyncedCount + hub.streamCount).toBe(0);
    });
  });
});
