/**
 * Snapshot install under live watchers: the server swaps the store behind the hub's store view and calls
 * `hub.restore()`. Watchers continue from the new store exactly after what they had, never going back in time
 * (etcd #15271), and are canceled only when what they still need was compacted on the leader.
 */
import { describe, expect, it } from 'vitest';
import { fromUtf8, utf8 } from '../../src/base/index.js';
import type { Event } from '../../src/mvcc/types.js';
import { WatchHub } from '../../src/mvcc/watch-hub.js';
import { watchCreateRequest, watchCancelReasons, type WatchableStore, type WatchResponse } from '../../src/mvcc/watch-types.js';
import { KvHarness, type FakeOp } from './watch-fake-store.js';

/** What the server's store view does: forwards to whichever store is current. */
class StoreView implements WatchableStore {
  constructor(public current: KvHarness) {}
  get revision(): number {
    return this.current.revision;
  }
  get compactRevision(): number {
    return this.current.compactRevision;
  }
  onWrite(listener: (revision: number, events: Event[]) => void): () => void {
    return this.current.onWrite(listener);
  }
  readEvents(from: number, to: number): Event[] {
    return this.current.readEvents(from, to);
  }
}

/** A follower's store (first n writes) and the leader's (all of them), from the same history. */
async function stores(writes: FakeOp[][], followerWrites: number) {
  const follower = await KvHarness.open();
  const leader = await KvHarness.open();
  writes.forEach((ops, i) => {
    leader.write(ops);
    if (i < followerWrites) follower.write(ops);
  });
  return { follower, leader };
}

const log = (responses: WatchResponse[]) =>
  responses.flatMap((r) => (r.canceled ? [`${r.watchId} canceled@${r.compactRevision}`] : r.events.map((e) => `${r.watchId} ${e.kv.modRevision} ${fromUtf8(e.kv.key)}`)));

describe('watch hub restore after a snapshot install', () => {
  it('continues right after what each watcher saw: a quiet watcher survives a compaction it does not need', async () => {
    const writes: FakeOp[][] = [[{ key: 'q', value: '0' }], ...Array.from({ length: 8 }, (_, i) => [{ key: 'a', value: `${i}` }])];
    const { follower, leader } = await stores(writes.slice(0, 1), 1);
    const view = new StoreView(follower);
    const hub = new WatchHub(view);
    const out: WatchResponse[] = [];
    const stream = hub.openStream((r) => void out.push(r));
    stream.create(watchCreateRequest({ key: utf8('a') }));
    stream.create(watchCreateRequest({ key: utf8('q') })); // needs revision 3 on; 'q' never changes again
    for (const ops of writes.slice(1, 4)) follower.write(ops); // follower reaches 5
    for (const ops of writes.slice(1)) leader.write(ops); // leader reaches 10
    leader.compact(4);
    expect(log(out)).toEqual(['0 3 a', '0 4 a', '0 5 a']);
    view.current = leader;
    hub.restore();
    leader.put('q', 'live');
    expect(log(out)).toEqual(['0 3 a', '0 4 a', '0 5 a', '0 6 a', '0 7 a', '0 8 a', '0 9 a', '0 10 a', '1 11 q']);
  });

  it('cancels, with compactRevision, the watchers whose next revision the leader compacted', async () => {
    const writes: FakeOp[][] = Array.from({ length: 8 }, (_, i) => [{ key: 'a', value: `${i}` }]);
    const { follower, leader } = await stores(writes, 3);
    leader.compact(6);
    const view = new StoreView(follower);
    const hub = new WatchHub(view);
    const out: WatchResponse[] = [];
    hub.openStream((r) => void out.push(r)).create(watchCreateRequest({ key: utf8('a') }));
    view.current = leader;
    hub.restore();
    expect(log(out)).toEqual(['0 canceled@6']);
    expect(out.at(-1)!.cancelReason).toBe(watchCancelReasons.compacted);
    expect(hub.syncedCount + hub.unsyncedCount).toBe(0);
  });

  it('delivers the writes the follower missed, once, then live ones', async () => {
    const writes: FakeOp[][] = Array.from({ length: 6 }, (_, i) => [{ key: 'a', value: `${i}` }]);
    const { follower, leader } = await stores(writes, 3);
    leader.compact(3);
    const view = new StoreView(follower);
    const hub = new WatchHub(view);
    const out: WatchResponse[] = [];
    hub.openStream((r) => void out.push(r)).create(watchCreateRequest({ key: utf8('a'), startRevision: 2 }));
    expect(log(out)).toEqual(['0 2 a', '0 3 a', '0 4 a']);
    view.current = leader;
    hub.restore();
    leader.put('a', 'live');
    expect(log(out)).toEqual(['0 2 a', '0 3 a', '0 4 a', '0 5 a', '0 6 a', '0 7 a', '0 8 a']);
    expect(out.filter((r) => r.canceled)).toEqual([]);
  });
});
