/** The Watch stream on the wire: many watchers, client-chosen ids, cancel, progress, compaction, fragments. */
import type * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { b, call } from './harness.js';
import { startNodeHarness, type NodeHarness } from './node-harness.js';

let h: NodeHarness;
let kv: ReturnType<NodeHarness['client']>;

beforeAll(async () => {
  h = await startNodeHarness();
  kv = h.client('etcdserverpb.KV');
});
afterAll(async () => {
  await h?.close();
});

interface Long {
  toString(): string;
}
interface WireEvent {
  type: number;
  kv: { key: Buffer; value: Buffer; modRevision: Long };
  prevKv?: { value: Buffer };
}
interface WireWatchResponse {
  header: { revision: Long; clusterId: Long };
  watchId: Long;
  created: boolean;
  canceled: boolean;
  compactRevision: Long;
  cancelReason: string;
  fragment: boolean;
  events: WireEvent[];
}

/** A watch stream with a queue of received responses. */
function openWatch(): {
  stream: grpc.ClientDuplexStream<unknown, WireWatchResponse>;
  next(): Promise<WireWatchResponse>;
} {
  const stream = h.client('etcdserverpb.Watch').Watch!() as grpc.ClientDuplexStream<unknown, WireWatchResponse>;
  const queue: WireWatchResponse[] = [];
  const waiters: ((r: WireWatchResponse) => void)[] = [];
  stream.on('data', (r: WireWatchResponse) => {
    const w = waiters.shift();
    if (w) w(r);
    else queue.push(r);
  });
  stream.on('error', () => {});
  const next = (): Promise<WireWatchResponse> => {
    const r = queue.shift();
    if (r) return Promise.resolve(r);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no watch response within 5 s')), 5000);
      waiters.push((x) => {
        clearTimeout(t);
        resolve(x);
      });
    });
  };
  return { stream, next };
}

const put = (key: string, value: string): Promise<{ header: { revision: Long } }> =>
  call(kv, 'Put', { key: b(key), value: b(value) });

describe('Watch', () => {
  it('serves many watchers on one stream, honouring client-chosen ids and refusing duplicates', async () => {
    const { stream, next } = openWatch();
    stream.write({ createRequest: { key: b('m/'), rangeEnd: b('m0'), watchId: 7 } });
    const a = await next();
    expect({ id: a.watchId.toString(), created: a.created, canceled: a.canceled }).toEqual({ id: '7', created: true, canceled: false });
    expect(a.header.clusterId.toString()).not.toBe('0');
    stream.write({ createRequest: { key: b('m/x'), prevKv: true } });
    const c = await next();
    expect(c.created).toBe(true);
    const autoId = c.watchId.toString();
    stream.write({ createRequest: { key: b('other'), watchId: 7 } });
    const dup = await next();
    expect({ id: dup.watchId.toString(), created: dup.created, canceled: dup.canceled, reason: dup.cancelReason }).toEqual({
      id: '-1',
      created: true,
      canceled: true,
      reason: 'mvcc: duplicate watch ID provided on the WatchStream',
    });
    await put('m/x', '1');
    await put('m/x', '2');
    const got = [await next(), await next(), await next(), await next()];
    const byId = (id: string): string[] =>
      got
        .filter((r) => r.watchId.toString() === id)
        .flatMap((r) => r.events.map((e) => `${e.kv.value}${e.prevKv ? `<${e.prevKv.value}` : ''}`));
    expect(byId('7')).toEqual(['1', '2']);
    expect(byId(autoId)).toEqual(['1', '2<1']);
    for (const r of got) expect(r.header.revision.toString()).toBe(r.events[0]!.kv.modRevision.toString());
    stream.write({ cancelRequest: { watchId: 7 } });
    const canceled = await next();
    expect({ id: canceled.watchId.toString(), canceled: canceled.canceled }).toEqual({ id: '7', canceled: true });
    stream.cancel();
  });

  it('answers a progress request with watch id -1 and the current revision', async () => {
    const { stream, next } = openWatch();
    stream.write({ createRequest: { key: b('p') } });
    await next();
    const rev = (await put('unrelated', 'x')).header.revision.toString();
    stream.write({ progressRequest: {} });
    const progress = await next();
    expect({
      id: progress.watchId.toString(),
      created: progress.created,
      canceled: progress.canceled,
      events: progress.events.length,
      revision: progress.header.revision.toString(),
    }).toEqual({ id: '-1', created: false, canceled: false, events: 0, revision: rev });
    stream.cancel();
  });

  it('replays history from a start revision and cancels a watch whose start was compacted', async () => {
    const first = await put('hist', 'a');
    await put('hist', 'b');
    const from = Number(first.header.revision.toString());
    const { stream, next } = openWatch();
    stream.write({ createRequest: { key: b('hist'), startRevision: from } });
    expect((await next()).created).toBe(true);
    const replay = await next();
    expect(replay.events.map((e) => e.kv.value.toString())).toEqual(['a', 'b']);
    await call(kv, 'Compact', { revision: from + 1 });
    stream.write({ createRequest: { key: b('hist'), startRevision: from } });
    const created = await next();
    expect(created.created).toBe(true);
    const canceled = await next();
    expect({
      canceled: canceled.canceled,
      compactRevision: canceled.compactRevision.toString(),
      reason: canceled.cancelReason,
    }).toEqual({
      canceled: true,
      compactRevision: String(from + 1),
      reason: 'etcdserver: mvcc: required revision has been compacted',
    });
    stream.cancel();
  });

  // etcd 3.4 keeps the state at the compact revision: a watch starting exactly there streams it (issue 35).
  it('streams a watch that starts exactly at the compact revision', async () => {
    const revs: number[] = [];
    for (const v of ['1', '2', '3', '4']) revs.push(Number((await put('atc', v)).header.revision.toString()));
    await call(kv, 'Compact', { revision: revs[1] });
    const { stream, next } = openWatch();
    stream.write({ createRequest: { key: b('atc'), startRevision: revs[1] } });
    expect((await next()).created).toBe(true);
    const replay = await next();
    expect({ canceled: replay.canceled, values: replay.events.map((e) => e.kv.value.toString()) }).toEqual({ canceled: false, values: ['2', '3', '4'] });
    stream.cancel();
  });

  it('fragments an oversized revision for a watcher that asked, and only for it', async () => {
    const value = Buffer.alloc(600 * 1024, 'v');
    for (const i of [0, 1, 2, 3]) await call(kv, 'Put', { key: b(`f/${i}`), value });
    const { stream, next } = openWatch();
    stream.write({ createRequest: { key: b('f/'), rangeEnd: b('f0'), fragment: true, prevKv: true } });
    stream.write({ createRequest: { key: b('f/'), rangeEnd: b('f0'), prevKv: true } });
    const fragmentingId = (await next()).watchId.toString();
    const wholeId = (await next()).watchId.toString();
    // One revision deleting four keys: with prev_kv its events weigh 2.4 MB, past the 1.5 MiB response limit.
    await call(kv, 'DeleteRange', { key: b('f/'), rangeEnd: b('f0') });
    const received = [await next(), await next(), await next()];
    const whole = received.filter((r) => r.watchId.toString() === wholeId);
    expect(whole).toHaveLength(1);
    expect(whole[0]!.events).toHaveLength(4);
    const parts = received.filter((r) => r.watchId.toString() === fragmentingId);
    while (parts.at(-1)!.fragment) parts.push(await next());
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.flatMap((p) => p.events.map((e) => e.kv.key.toString()))).toEqual(['f/0', 'f/1', 'f/2', 'f/3']);
    expect(parts.every((p) => p.events.every((e) => e.prevKv?.value.length === value.length))).toBe(true);
    expect(parts.slice(0, -1).every((p) => p.fragment)).toBe(true);
    stream.cancel();
  });
});

describe('Watch backpressure', () => {
  it('delivers every event in order to a client that stopped reading for a while', async () => {
    const { stream, next } = openWatch();
    stream.write({ createRequest: { key: b('bp/'), rangeEnd: b('bp0') } });
    await next();
    stream.pause();
    const value = Buffer.alloc(4096, 'x');
    const puts = 600; // 2.4 MB: well past HTTP/2 flow-control windows and the stream's write buffer
    let lastRevision = '';
    for (let i = 0; i < puts; i++) lastRevision = (await put(`bp/${i % 50}`, value.toString())).header.revision.toString();
    stream.resume();
    const revisions: number[] = [];
    while (revisions.at(-1)?.toString() !== lastRevision) {
      const r = await next();
      for (const e of r.events) revisions.push(Number(e.kv.modRevision.toString()));
    }
    expect(revisions).toHaveLength(puts);
    for (let i = 1; i < revisions.length; i++) expect(revisions[i]).toBe(revisions[i - 1]! + 1);
    stream.cancel();
  });
});

describe('LeaseKeepAlive stream', () => {
  it('answers each request in order; an unknown lease gets TTL 0', async () => {
    const lease = h.client('etcdserverpb.Lease');
    const granted = await call<{ ID: Long }>(lease, 'LeaseGrant', { TTL: 42 });
    const stream = lease.LeaseKeepAlive!() as grpc.ClientDuplexStream<unknown, { ID: Long; TTL: Long }>;
    const answers: string[] = [];
    const done = new Promise<void>((resolve) => {
      stream.on('data', (r) => {
        answers.push(`${r.ID.toString()}:${r.TTL.toString()}`);
        if (answers.length === 3) resolve();
      });
    });
    stream.write({ ID: granted.ID });
    stream.write({ ID: 999 });
    stream.write({ ID: granted.ID });
    await done;
    const id = granted.ID.toString();
    expect(answers).toEqual([`${id}:42`, '999:0', `${id}:42`]);
    stream.end();
  });
});
