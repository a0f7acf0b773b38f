import { describe, expect, it } from 'vitest';
import { fromUtf8, leaseTtlSecondsMax, utf8 } from '../../src/base/index.js';
import { decodeLeaseRecord, encodeLeaseRecord, leaseIdOfKey, leaseKey } from '../../src/mvcc/lease-codec.js';
import { Lessor, NotPrimaryError, type LessorOptions } from '../../src/mvcc/lessor.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { EventType, MvccError, SortOrder, SortTarget, type KeyValue } from '../../src/mvcc/types.js';
import { WatchHub } from '../../src/mvcc/watch-hub.js';
import { watchCreateRequest, type WatchResponse } from '../../src/mvcc/watch-types.js';

const s = 1000;

async function open(backend = new MemoryBackend(), options: LessorOptions = {}) {
  const store = await KvStore.open(backend);
  const lessor = await Lessor.load(backend, store, options);
  store.setLeaseHooks(lessor);
  return { backend, store, lessor };
}

function put(store: KvStore, key: string, lease = 0n): number {
  return store.put({ key: utf8(key), value: utf8(`v-${key}`), lease, prevKv: false, ignoreValue: false, ignoreLease: false }).revision;
}

function get(store: KvStore, key: string): KeyValue | undefined {
  const r = store.range({
    key: utf8(key), rangeEnd: new Uint8Array(0), limit: 0, revision: 0, sortOrder: SortOrder.None, sortTarget: SortTarget.Key,
    serializable: false, keysOnly: false, countOnly: false, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0,
  });
  return r.kvs[0];
}

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof MvccError) return err.code;
    if (err instanceof NotPrimaryError) return 'notPrimary';
    throw err;
  }
  return 'ok';
}

describe('lease grant, list and validation', () => {
  it('grants with the minimum TTL floor and refuses id 0, a too large TTL and an existing id with etcd codes', async () => {
    const { lessor } = await open(undefined, { minTtlSeconds: 5 });
    expect(lessor.grant(7n, 2)).toEqual({ id: 7n, ttlSeconds: 5 });
    expect(lessor.grant(8n, 60)).toEqual({ id: 8n, ttlSeconds: 60 });
    expect(lessor.grant(9n, -3).ttlSeconds).toBe(5);
    expect(code(() => lessor.grant(0n, 10))).toBe('leaseNotFound');
    expect(code(() => lessor.grant(10n, leaseTtlSecondsMax + 1))).toBe('leaseTtlTooLarge');
    expect(code(() => lessor.grant(7n, 10))).toBe('leaseExists');
    expect(lessor.leases()).toEqual([
      { id: 7n, ttlSeconds: 5 },
      { id: 8n, ttlSeconds: 60 },
      { id: 9n, ttlSeconds: 5 },
    ]);
  });

  it('lets the store refuse a put naming a lease that does not exist', async () => {
    const { store, lessor } = await open();
    lessor.grant(1n, 10);
    put(store, 'a', 1n);
    expect(code(() => put(store, 'b', 2n))).toBe('leaseNotFound');
  });
});

describe('lease revoke', () => {
  it('deletes every attached key in one revision, seen by a watcher as one response, then forgets the lease', async () => {
    const { store, lessor } = await open();
    const hub = new WatchHub(store);
    const seen: WatchResponse[] = [];
    hub.openStream((r) => void seen.push(r)).create(watchCreateRequest({ key: utf8('k'), rangeEnd: utf8('l'), prevKv: true }));
    lessor.grant(1n, 10);
    lessor.grant(2n, 10);
    for (const k of ['k3', 'k1', 'k2']) put(store, k, 1n);
    put(store, 'k4', 2n);
    put(store, 'k2'); // moved off the lease: detached
    const before = store.revision;
    lessor.revoke(1n);
    expect(store.revision).toBe(before + 1);
    expect(['k1', 'k2', 'k3', 'k4'].map((k) => get(store, k) !== undefined)).toEqual([false, true, false, true]);
    const last = seen.at(-1)!;
    expect(last.revision).toBe(before + 1);
    expect(last.events.map((e) => [e.type, fromUtf8(e.kv.key), e.prevKv?.lease])).toEqual([
      [EventType.Delete, 'k1', 1n],
      [EventType.Delete, 'k3', 1n],
    ]);
    expect(lessor.exists(1n)).toBe(false);
    expect(code(() => lessor.revoke(1n))).toBe('leaseNotFound');
  });

  it('a lease without keys is revoked without a new revision', async () => {
    const { store, lessor } = await open();
    lessor.grant(1n, 10);
    put(store, 'a', 1n);
    store.deleteRange({ key: utf8('a'), rangeEnd: new Uint8Array(0), prevKv: false });
    const rev = store.revision;
    lessor.revoke(1n);
    expect(store.revision).toBe(rev);
  });
});

describe('lease expiry on the leader', () => {
  it('a follower never expires or renews leases', async () => {
    const { lessor } = await open();
    lessor.grant(1n, 1);
    expect(lessor.expired(1e12, 10)).toEqual([]);
    expect(lessor.checkpointsDue(1e12, 10)).toEqual([]);
    expect(code(() => lessor.renew(1n, 0))).toBe('notPrimary');
  });

  it('expires at promote time + TTL, keepalive pushes it a full TTL on, and each expiry is offered once per retry interval', async () => {
    const { lessor } = await open();
    lessor.grant(1n, 10);
    lessor.grant(2n, 20);
    lessor.promote(1000);
    expect(lessor.expired(1000 + 10 * s - 1, 10)).toEqual([]);
    expect(lessor.renew(1n, 5000)).toBe(10);
    expect(lessor.expired(1000 + 10 * s, 10)).toEqual([]);
    expect(lessor.expired(5000 + 10 * s, 10)).toEqual([1n]);
    expect(lessor.expired(5000 + 10 * s + 100, 10)).toEqual([]);
    expect(lessor.expired(5000 + 13 * s, 10)).toEqual([1n]);
    expect(code(() => lessor.renew(1n, 5000 + 13 * s))).toBe('leaseNotFound');
    expect(lessor.expired(1000 + 20 * s, 10)).toContain(2n);
    expect(code(() => lessor.renew(99n, 0))).toBe('leaseNotFound');
  });

  it('caps the expired leases returned per call', async () => {
    const { lessor } = await open();
    for (let i = 1n; i <= 5n; i++) lessor.grant(i, 1);
    lessor.promote(0);
    expect(lessor.expired(2 * s, 2)).toHaveLength(2);
    expect(lessor.expired(2 * s, 10)).toHaveLength(3);
  });

  it('a lease granted while leader starts its clock at the next time the leader reads the clock: late, never early', async () => {
    const { lessor } = await open();
    lessor.promote(0);
    lessor.grant(1n, 10);
    expect(lessor.expired(4 * s, 10)).toEqual([]);
    expect(lessor.expired(4 * s + 10 * s - 1, 10)).toEqual([]);
    expect(lessor.expired(4 * s + 10 * s, 10)).toEqual([1n]);
  });

  it('an extend on promote (the election timeout, as etcd) delays every expiry', async () => {
    const { lessor } = await open();
    lessor.grant(1n, 10);
    lessor.promote(0, { extendMs: 1500 });
    expect(lessor.expired(11 * s, 10)).toEqual([]);
    expect(lessor.expired(11.5 * s, 10)).toEqual([1n]);
  });

  it('timeToLive reports remaining (truncated) and granted TTL, and sorted keys on request', async () => {
    const { store, lessor } = await open();
    lessor.grant(1n, 30);
    put(store, 'b', 1n);
    put(store, 'a', 1n);
    expect(lessor.timeToLive(1n, 0, false)).toEqual({ id: 1n, ttlSeconds: 30, grantedTtlSeconds: 30, keys: [] });
    lessor.promote(0);
    const t = lessor.timeToLive(1n, 12_500, true);
    expect([t.ttlSeconds, t.grantedTtlSeconds, t.keys.map(fromUtf8)]).toEqual([17, 30, ['a', 'b']]);
    expect(code(() => lessor.timeToLive(5n, 0, false))).toBe('leaseNotFound');
  });
});

describe('lease checkpoints across leader changes (etcd #9888)', () => {
  it('a checkpointed remaining TTL survives demote/promote: the lease is neither reset nor extended', async () => {
    const { lessor } = await open(undefined, { checkpointIntervalMs: 60 * s });
    lessor.grant(1n, 300);
    lessor.grant(2n, 30); // shorter than the interval: never checkpointed
    lessor.promote(0);
    expect(lessor.checkpointsDue(59 * s, 10)).toEqual([]);
    const due = lessor.checkpointsDue(60 * s, 10);
    expect(due).toEqual([{ id: 1n, remainingTtlSeconds: 240 }]);
    for (const c of due) lessor.checkpoint(c.id, c.remainingTtlSeconds); // applied through Raft
    lessor.demote();
    expect(lessor.expired(1e9, 10)).toEqual([]);
    // A new leader, much later: 240 s from its promote, not 300 s and not the old deadline.
    lessor.promote(1000 * s);
    expect(lessor.expired(1000 * s + 240 * s - 1, 10)).not.toContain(1n);
    expect(lessor.expired(1000 * s + 240 * s, 10)).toContain(1n);
  });

  it('a keepalive on a checkpointed lease asks for a clearing checkpoint, after which promote uses the full TTL', async () => {
    const { lessor } = await open(undefined, { checkpointIntervalMs: 60 * s });
    lessor.grant(1n, 300);
    lessor.promote(0);
    lessor.checkpoint(1n, 100);
    lessor.renew(1n, 10 * s);
    expect(lessor.checkpointsDue(10 * s, 10)).toEqual([{ id: 1n, remainingTtlSeconds: 0 }]);
    lessor.checkpoint(1n, 0);
    lessor.demote();
    lessor.promote(0);
    expect(lessor.expired(299 * s, 10)).toEqual([]);
    expect(lessor.expired(300 * s, 10)).toEqual([1n]);
  });
});

describe('lease persistence', () => {
  it('round-trips leases, checkpoints and attached keys through the backend; revoke persists too', async () => {
    const first = await open();
    first.lessor.grant(1n, 100);
    first.lessor.grant(-5n, 50);
    first.lessor.checkpoint(1n, 40);
    put(first.store, 'x', 1n);
    put(first.store, 'y', -5n);
    await first.store.flush();
    const second = await open(first.backend);
    expect(second.lessor.leases()).toEqual([
      { id: -5n, ttlSeconds: 50 },
      { id: 1n, ttlSeconds: 100 },
    ]);
    expect(second.lessor.timeToLive(1n, 0, true)).toEqual({ id: 1n, ttlSeconds: 40, grantedTtlSeconds: 100, keys: [utf8('x')] });
    second.lessor.revoke(-5n);
    expect(get(second.store, 'y')).toBeUndefined();
    await second.store.flush();
    const third = await open(first.backend);
    expect(third.lessor.leases()).toEqual([{ id: 1n, ttlSeconds: 100 }]);
    expect(get(third.store, 'y')).toBeUndefined();
  });

  it('encodes records as etcd does (8-byte big-endian key, leasepb varints)', () => {
    expect(Array.from(leaseKey(0x0102n))).toEqual([0, 0, 0, 0, 0, 0, 1, 2]);
    expect(leaseIdOfKey(leaseKey(-2n))).toBe(-2n);
    expect(Array.from(encodeLeaseRecord({ id: 1n, ttlSeconds: 300, remainingTtlSeconds: 0 }))).toEqual([8, 1, 16, 0xac, 2]);
    for (const r of [{ id: -7n, ttlSeconds: leaseTtlSecondsMax, remainingTtlSeconds: 12 }, { id: 2n ** 62n, ttlSeconds: 1, remainingTtlSeconds: 0 }]) {
      expect(decodeLeaseRecord(encodeLeaseRecord(r))).toEqual(r);
    }
  });
});

describe('lease pile-up on promote', () => {
  it('spreads leases sharing one deadline so no second holds more than 3/4 of the revoke rate (etcd Promote)', async () => {
    const { lessor } = await open(undefined, { revokeRatePerSecond: 100 });
    for (let i = 1n; i <= 400n; i++) lessor.grant(i, 10);
    lessor.promote(0);
    const perSecond: number[] = [];
    const seen = new Set<bigint>();
    for (let t = 10; t < 20; t++) {
      const fresh = lessor.expired(t * s + 999, 1000).filter((id) => !seen.has(id));
      for (const id of fresh) seen.add(id);
      perSecond.push(fresh.length);
    }
    expect(seen.size).toBe(400);
    expect(Math.max(...perSecond)).toBeLessThanOrEqual(76);
    expect(lessor.expired(10 * s - 1, 1000)).toEqual([]);
  });
});
