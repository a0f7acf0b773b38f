/**
 * The client port's HTTP/1.1 side through curl-like requests (Node's fetch): the JSON gateway compared with a
 * real etcd 3.4 answering the same sequence (bodies with response headers removed, HTTP status, content type),
 * and /health, /version, /metrics beside gRPC on the same port.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { killAll, startServer, type ServerProcess } from './harness.js';
import { haveEtcd, startRealEtcd, type RealEtcd } from './real-etcd.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

interface Answer {
  status: number;
  type: string;
  body: unknown;
}

/** Drops every `header` (ids and terms differ between the two servers; revisions are compared in bodies). */
function withoutHeaders(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutHeaders);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'header').map(([k, x]) => [k, withoutHeaders(x)]));
}

async function post(base: string, path: string, body?: unknown, method = 'POST'): Promise<Answer> {
  const init: RequestInit = { method, signal: AbortSignal.timeout(10_000) };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  let parsed: unknown = text;
  if (type.startsWith('application/json')) parsed = text.trim().split('\n').map((line) => withoutHeaders(JSON.parse(line)));
  return { status: res.status, type, body: parsed };
}

/** A streamed call read for `ms`, then aborted: the JSON lines it produced. */
async function streamLines(base: string, path: string, body: unknown, ms: number, during?: () => Promise<void>): Promise<unknown[]> {
  const controller = new AbortController();
  const res = await fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body), signal: controller.signal });
  const reader = res.body!.getReader();
  let text = '';
  const reading = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += Buffer.from(value).toString('utf8');
      }
    } catch {
      // aborted
    }
  })();
  await new Promise((r) => setTimeout(r, 300));
  await during?.();
  await new Promise((r) => setTimeout(r, ms));
  controller.abort();
  await reading;
  return text.trim().split('\n').filter((l) => l !== '').map((l) => withoutHeaders(JSON.parse(l)));
}

/** The same requests, in order, for both servers; each is [path, body]. */
const sequence: Array<[string, unknown]> = [
  ['/v3/kv/put', { key: b64('foo'), value: b64('bar') }],
  ['/v3/kv/put', { key: b64('foo2'), value: b64('baz'), prev_kv: true }],
  ['/v3/kv/put', { key: b64('foo2'), value: b64('qux'), prevKv: true }],
  ['/v3/kv/range', { key: b64('foo') }],
  ['/v3/kv/range', { key: b64('foo'), range_end: b64('fop'), sort_order: 'DESCEND', sort_target: 'MOD' }],
  ['/v3/kv/range', { key: b64('foo'), rangeEnd: b64('fop'), keys_only: true, limit: 1 }],
  ['/v3/kv/range', { key: b64('foo'), range_end: b64('fop'), count_only: true }],
  ['/v3/kv/range', { key: b64('foo'), revision: '2' }],
  ['/v3/kv/range', { key: b64('foo'), revision: 100 }],
  ['/v3/kv/range', { key: '' }],
  ['/v3/kv/range', { key: 'not base64!' }],
  ['/v3/kv/range', { key: b64('foo'), unknown_field: 1 }],
  ['/v3/kv/put', { key: b64('leased'), value: b64('v'), lease: '12345' }],
  ['/v3/kv/txn', {
    compare: [{ target: 'CREATE', key: b64('t'), createRevision: '0' }],
    success: [{ requestPut: { key: b64('t'), value: b64('1') } }],
    failure: [{ request_range: { key: b64('t') } }],
  }],
  ['/v3/kv/txn', {
    compare: [{ target: 'CREATE', key: b64('t'), create_revision: 0 }],
    success: [{ request_put: { key: b64('t'), value: b64('1') } }],
    failure: [{ requestRange: { key: b64('t') } }],
  }],
  ['/v3/kv/txn', { compare: [{ result: 'GREATER', target: 'VALUE', key: b64('t'), value: b64('0') }], success: [{ request_delete_range: { key: b64('t'), prev_kv: true } }] }],
  ['/v3/kv/deleterange', { key: b64('foo'), range_end: b64('fop'), prev_kv: true }],
  ['/v3/kv/deleterange', { key: b64('nothing') }],
  ['/v3/lease/grant', { TTL: 30, ID: 77 }],
  ['/v3/lease/grant', { TTL: '30', ID: '77' }],
  ['/v3/lease/timetolive', { ID: '78' }],
  ['/v3/lease/revoke', { ID: '123' }],
  ['/v3/kv/lease/revoke', { ID: 77 }],
  ['/v3/lease/leases', {}],
  ['/v3/kv/compaction', { revision: '3' }],
  ['/v3/kv/compaction', { revision: '3' }],
  ['/v3/kv/range', { key: b64('foo2'), revision: 2 }],
  ['/v3/maintenance/alarm', {}],
  ['/v3/kv/nope', {}],
  ['/v3/kv/range', '{"key":"Zm9v"} {"key":"YQ=="}'],
  ['/v3/kv/range', ''],
  // etcd 3.4 serves its whole gateway under /v3beta/ too, and nothing under /v3alpha/ (issue 35).
  ['/v3beta/kv/put', { key: b64('beta'), value: b64('1') }],
  ['/v3beta/kv/range', { key: b64('beta') }],
  ['/v3beta/maintenance/alarm', {}],
  ['/v3beta/kv/nope', {}],
  ['/v3alpha/kv/range', { key: b64('beta') }],
];

describe('the JSON gateway on the client port', () => {
  let ours: ServerProcess;
  let etcd: RealEtcd | undefined;
  const withEtcd = haveEtcd();

  beforeAll(async () => {
    [ours, etcd] = await Promise.all([
      startServer({ name: 'gw', args: ['--cluster-init'] }),
      withEtcd ? startRealEtcd('gwref') : Promise.resolve(undefined),
    ]);
  }, 60_000);
  afterAll(async () => {
    await etcd?.stop();
    await killAll();
  });

  it.skipIf(!withEtcd)('answers a request sequence exactly as etcd 3.4 does (headers aside)', async () => {
    for (const [path, body] of sequence) {
      const theirs = await post(etcd!.clientUrl, path, body);
      const mine = await post(ours.clientUrl, path, body);
      expect({ path, request: body, ...mine }).toEqual({ path, request: body, ...theirs });
    }
    for (const base of [etcd!.clientUrl, ours.clientUrl]) {
      expect((await post(base, '/v3/kv/range', undefined, 'GET')).status).toBe(405);
    }
  }, 60_000);

  it.skipIf(!withEtcd)('streams watch events and keep-alive answers as etcd 3.4 does', async () => {
    const watch = async (base: string): Promise<unknown[]> =>
      streamLines(base, '/v3/watch', { create_request: { key: b64('w'), prev_kv: true } }, 300, async () => {
        await post(base, '/v3/kv/put', { key: b64('w'), value: b64('1') });
        await post(base, '/v3/kv/put', { key: b64('w'), value: b64('2') });
        await post(base, '/v3/kv/deleterange', { key: b64('w') });
      });
    expect(await watch(ours.clientUrl)).toEqual(await watch(etcd!.clientUrl));
    const keepAlive = async (base: string): Promise<unknown[]> => {
      await post(base, '/v3/lease/grant', { TTL: 60, ID: 99 });
      return streamLines(base, '/v3/lease/keepalive', { ID: '99' }, 100);
    };
    expect(await keepAlive(ours.clientUrl)).toEqual(await keepAlive(etcd!.clientUrl));
    const gone = async (base: string): Promise<unknown[]> => streamLines(base, '/v3/lease/keepalive', { ID: '98' }, 100);
    expect(await gone(ours.clientUrl)).toEqual([{ result: { ID: '98' } }]);
    expect(await gone(ours.clientUrl)).toEqual(await gone(etcd!.clientUrl));
  }, 60_000);

  it('serves /health, /version and /metrics beside gRPC on the same port', async () => {
    const health = await fetch(`${ours.clientUrl}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ health: 'true', reason: '' });
    const version = (await (await fetch(`${ours.clientUrl}/version`)).json()) as { etcdserver: string; etcdcluster: string };
    const client = new Etcd3({ hosts: ours.clientUrl });
    try {
      const status = await client.maintenance.status();
      expect(version).toEqual({ etcdserver: status.version, etcdcluster: '3.5.0' });
      await client.put('mixed').value('1');
      const metrics = await (await fetch(`${ours.clientUrl}/metrics`)).text();
      expect(metrics).toMatch(/^etcd_server_has_leader 1$/m);
      const range = await post(ours.clientUrl, '/v3/kv/range', { key: b64('mixed') });
      expect(range.body).toEqual([{ kvs: [expect.objectContaining({ key: b64('mixed'), value: b64('1') })], count: '1' }]);
    } finally {
      client.close();
    }
  });

  it('runs Lock and Election through the gateway', async () => {
    const lock = await post(ours.clientUrl, '/v3/lock/lock', { name: b64('gwlock') });
    const key = ((lock.body as Array<{ key: string }>)[0]!).key;
    expect(Buffer.from(key, 'base64').toString()).toMatch(/^gwlock\/[0-9a-f]+$/);
    expect((await post(ours.clientUrl, '/v3/lock/unlock', { key })).status).toBe(200);
    const none = await post(ours.clientUrl, '/v3/election/leader', { name: b64('gwelect') });
    expect(none).toMatchObject({ status: 500, body: [{ error: 'election: no leader', code: 2 }] });
  });
});
