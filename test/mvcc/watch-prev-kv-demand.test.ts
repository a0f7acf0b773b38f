/**
 * The hub asks the store for prevKv only while a watcher wants it (etcd reads the previous value only for
 * prev_kv watchers): observed through a second listener that never wants prevKv itself, so the events it sees
 * carry prevKv exactly when the hub asked for it.
 */
import { describe, expect, it } from 'vitest';
import { fromUtf8, utf8 } from '../../src/base/index.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import type { Event } from '../../src/mvcc/types.js';
import { WatchHub } from '../../src/mvcc/watch-hub.js';
import { watchCreateRequest, type WatchResponse } from '../../src/mvcc/watch-types.js';
import { putReq } from './helpers.js';

describe('prevKv demand', () => {
  it('follows the registered prev_kv watchers: none, one, canceled, its stream closed', async () => {
    const store = await KvStore.open(new MemoryBackend());
    const hub = new WatchHub(store);
    const probe: Event[] = [];
    store.onWrite((_, events) => probe.push(...events), { wantsPrevKv: () => false });
    const responses: WatchResponse[] = [];
    const stream = hub.openStream((r) => void responses.push(r));
    const lastProbePrev = (): string | undefined => {
      const prev = probe[probe.length - 1]!.prevKv;
      return prev === undefined ? undefined : fromUtf8(prev.value);
    };

    stream.create(watchCreateRequest({ key: utf8('a') }));
    store.put(putReq('a', '1'));
    store.put(putReq('a', '2'));
    expect(lastProbePrev()).toBeUndefined();

    stream.create(watchCreateRequest({ key: utf8('a'), prevKv: true, watchId: 7 }));
    store.put(putReq('a', '3'));
    expect(lastProbePrev()).toBe('2');
    const delivered = responses.filter((r) => r.watchId === 7 && r.events.length > 0);
    expect(delivered.map((r) => fromUtf8(r.events[0]!.prevKv!.value))).toEqual(['2']);

    stream.cancel(7);
    store.put(putReq('a', '4'));
    expect(lastProbePrev()).toBeUndefined();

    const other = hub.openStream(() => true);
    other.create(watchCreateRequest({ key: utf8('b'), prevKv: true }));
    store.put(putReq('a', '5'));
    expect(lastProbePrev()).toBe('4');
    other.close();
    store.put(putReq('a', '6'));
    expect(lastProbePrev()).toBeUndefined();
  });
});
