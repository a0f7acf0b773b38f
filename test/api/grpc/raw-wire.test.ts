/**
 * The wire itself, with a raw grpc-js client: statuses, headers, validation order, streams, no-leader. Kept on
 * FakeApi (issue 35): its no-leader and learner answers need a member switched to those states at once, which
 * a real single node cannot be; the other services' answers are compared with etcd 3.4 on the real server by
 * test/e2e/server-differential.test.ts.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { b, call, failedStatus, startHarness, type Harness } from './harness.js';

let h: Harness;
let kv: ReturnType<Harness['client']>;

beforeAll(async () => {
  h = await startHarness({ leaderCheckIntervalMs: 50 });
  kv = h.client('etcdserverpb.KV');
});
afterAll(async () => {
  await h?.close();
});

const status = failedStatus;

const S = grpc.status;

describe('KV validation, as etcd api/v3rpc/key.go', () => {
  const cases: [string, string, Record<string, unknown>, number, string][] = [
    ['range with an empty key', 'Range', {}, S.INVALID_ARGUMENT, 'etcdserver: key is not provided'],
    ['range with sort order 7', 'Range', { key: b('a'), sortOrder: 7 }, S.INVALID_ARGUMENT, 'etcdserver: invalid sort option'],
    ['range with sort target 9', 'Range', { key: b('a'), sortTarget: 9 }, S.INVALID_ARGUMENT, 'etcdserver: invalid sort option'],
    ['put with an empty key', 'Put', { value: b('v') }, S.INVALID_ARGUMENT, 'etcdserver: key is not provided'],
    ['put ignore_value with a value', 'Put', { key: b('k'), value: b('v'), ignoreValue: true }, S.INVALID_ARGUMENT, 'etcdserver: value is provided'],
    ['put ignore_lease with a lease', 'Put', { key: b('k'), lease: 5, ignoreLease: true }, S.INVALID_ARGUMENT, 'etcdserver: lease is provided'],
    ['put ignore_value on a missing key', 'Put', { key: b('nope'), ignoreValue: true }, S.INVALID_ARGUMENT, 'etcdserver: key not found'],
    ['delete with an empty key', 'DeleteRange', {}, S.INVALID_ARGUMENT, 'etcdserver: key is not provided'],
    ['txn with an empty RequestOp', 'Txn', { success: [{}] }, S.INVALID_ARGUMENT, 'etcdserver: key not found'],
    ['txn compare with an empty key', 'Txn', { compare: [{}] }, S.INVALID_ARGUMENT, 'etcdserver: key is not provided'],
    ['txn putting a key twice', 'Txn', { success: [{ requestPut: { key: b('d') } }, { requestPut: { key: b('d') } }] }, S.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request'],
    ['txn putting inside a deleted range', 'Txn', { failure: [{ requestDeleteRange: { key: b('a'), rangeEnd: b('c') } }, { requestPut: { key: b('b') } }] }, S.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request'],
    ['txn nested put colliding with an outer put', 'Txn', { success: [{ requestPut: { key: b('n') } }, { requestTxn: { success: [{ requestPut: { key: b('n') } }] } }] }, S.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request'],
    ['txn with 129 compares', 'Txn', { compare: Array.from({ length: 129 }, () => ({ key: b('k') })) }, S.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request'],
    ['compact in the future', 'Compact', { revision: 1_000_000 }, S.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision'],
    ['compact at a negative revision', 'Compact', { revision: -1 }, S.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'],
  ];
  for (const [name, method, req, code, details] of cases) {
    it(`refuses ${name}`, async () => {
      expect(await status(call(kv, method, req))).toEqual({ code, details });
    });
  }

  it('lets a nested txn put the same key in its then and else branches', async () => {
    const res = await call<{ succeeded: boolean }>(kv, 'Txn', {
      success: [{ requestTxn: { success: [{ requestPut: { key: b('tb') } }], failure: [{ requestPut: { key: b('tb') } }] } }],
    });
    expect(res.succeeded).toBe(true);
  });

  it('lets a txn put a key next to a from-key delete (etcd takes the "\\0" end literally)', async () => {
    // In the else branch, which a txn without compares never runs: validated, not applied.
    const res = await call<{ succeeded: boolean }>(kv, 'Txn', {
      failure: [{ requestPut: { key: b('fk/b') } }, { requestDeleteRange: { key: b('fk/a'), rangeEnd: Buffer.from([0]) } }],
    });
    expect(res.succeeded).toBe(true);
  });

  it('treats negative limit and revision as none / current, as etcd', async () => {
    await call(kv, 'Put', { key: b('neg'), value: b('v') });
    const res = await call<{ kvs: unknown[]; count: { toString(): string } }>(kv, 'Range', { key: b('neg'), limit: -5, revision: -3 });
    expect(res.kvs).toHaveLength(1);
    expect(res.count.toString()).toBe('1');
  });

  it('answers "request is too large" between the request limit and the gRPC limit, RESOURCE_EXHAUSTED beyond', async () => {
    const between = await status(call(kv, 'Put', { key: b('big'), value: Buffer.alloc(1.5 * 1024 * 1024 + 10) }));
    expect(between).toEqual({ code: S.INVALID_ARGUMENT, details: 'etcdserver: request is too large' });
    const beyond = await status(call(kv, 'Put', { key: b('big'), value: Buffer.alloc(3 * 1024 * 1024) }));
    expect(beyond.code).toBe(S.RESOURCE_EXHAUSTED);
  });
});

describe('headers', () => {
  it('puts the revision in every Txn sub-response header, and nothing else there', async () => {
    const res = await call<{ header: { revision: { toString(): string } }; responses: { responsePut?: { header: Record<string, { toString(): string }> } }[] }>(
      kv,
      'Txn',
      { success: [{ requestPut: { key: b('h1') } }, { requestPut: { key: b('h2') } }] },
    );
    const sub = res.responses[0]!.responsePut!.header;
    expect(sub.revision!.toString()).toBe(res.header.revision.toString());
    expect(sub.clusterId!.toString()).toBe('0');
  });

  it('leaves the revision out of Cluster headers, as etcd', async () => {
    const cluster = h.client('etcdserverpb.Cluster');
    const res = await call<{ header: { revision: { toString(): string }; memberId: { toString(): string } }; members: unknown[] }>(cluster, 'MemberList', {});
    expect(res.header.revision.toString()).toBe('0');
    expect(res.header.memberId.toString()).not.toBe('0');
    expect(res.members).toHaveLength(1);
  });
});

describe('unimplemented services', () => {
  for (const [service, method, req] of [
    ['etcdserverpb.Auth', 'AuthStatus', {}],
    ['etcdserverpb.Auth', 'UserAdd', { name: 'u' }],
  ] as const) {
    it(`answers ${service}.${method} UNIMPLEMENTED`, async () => {
      expect((await status(call(h.client(service), method, req))).code).toBe(S.UNIMPLEMENTED);
    });
  }
});

describe('learner', () => {
  it('serves only Status and serializable Range, as etcd', async () => {
    const refused = { code: S.UNAVAILABLE, details: 'etcdserver: rpc not supported for learner' };
    h.api.learner = true;
    try {
      expect(await status(call(kv, 'Put', { key: b('l'), value: b('v') }))).toEqual(refused);
      expect(await status(call(kv, 'Range', { key: b('l') }))).toEqual(refused);
      expect((await call<{ count: unknown }>(kv, 'Range', { key: b('l'), serializable: true })).count).toBeDefined();
      expect((await call<{ version: string }>(h.client('etcdserverpb.Maintenance'), 'Status', {})).version).toBe('3.5.17');
      const watch = h.client('etcdserverpb.Watch').Watch!() as grpc.ClientDuplexStream<unknown, unknown>;
      const err = await new Promise<grpc.ServiceError>((resolve) => watch.on('error', resolve));
      expect({ code: err.code, details: err.details }).toEqual(refused);
    } finally {
      h.api.learner = false;
    }
  });
});

describe('Maintenance', () => {
  it('reports version 3.5.17, and "etcdserver: no leader" plus alarms in Status.errors', async () => {
    const m = h.client('etcdserverpb.Maintenance');
    await call(m, 'Alarm', { action: 1, memberID: 5, alarm: 1 });
    h.api.leader = false;
    try {
      const s = await call<{ version: string; errors: string[]; leader: { toString(): string } }>(m, 'Status', {});
      expect(s.version).toBe('3.5.17');
      expect(s.leader.toString()).toBe('0');
      expect(s.errors).toEqual(['etcdserver: no leader', 'memberID:5 alarm:NOSPACE ']);
    } finally {
      h.api.leader = true;
    }
    const gone = await call<{ alarms: { memberID: { toString(): string }; alarm: number }[] }>(m, 'Alarm', { action: 2, memberID: 5, alarm: 1 });
    expect(gone.alarms.map((a) => [a.memberID.toString(), a.alarm])).toEqual([['5', 1]]);
    expect((await call<{ alarms: unknown[] }>(m, 'Alarm', {})).alarms).toEqual([]);
  });
});

describe('require leader (hasleader metadata)', () => {
  const md = (): grpc.Metadata => {
    const m = new grpc.Metadata();
    m.set('hasleader', 'true');
    return m;
  };

  it('refuses unary calls at once when there is no leader', async () => {
    h.api.leader = false;
    try {
      expect(await status(call(kv, 'Range', { key: b('a'), serializable: true }, md()))).toEqual({
        code: S.UNAVAILABLE,
        details: 'etcdserver: no leader',
      });
    } finally {
      h.api.leader = true;
    }
  });

  it('closes a hasleader watch stream with "etcdserver: no leader" after three leaderless checks', async () => {
    const watch = h.client('etcdserverpb.Watch');
    const plain = watch.Watch!() as grpc.ClientDuplexStream<unknown, unknown>;
    const required = watch.Watch!(md()) as grpc.ClientDuplexStream<unknown, { created: boolean }>;
    const created = new Promise((resolve) => required.once('data', resolve));
    required.write({ createRequest: { key: b('x') } });
    plain.write({ createRequest: { key: b('x') } });
    await created;
    let plainError: unknown;
    plain.on('error', (e) => (plainError = e));
    plain.on('data', () => {});
    const ended = new Promise<grpc.ServiceError>((resolve) => required.on('error', resolve));
    h.api.leader = false;
    const err = await ended;
    h.api.leader = true;
    expect({ code: err.code, details: err.details }).toEqual({ code: S.UNAVAILABLE, details: 'etcdserver: no leader' });
    expect(plainError).toBeUndefined();
    plain.cancel();
  });
});

describe('garbage', () => {
  it('answers a malformed protobuf request with an error status and keeps serving', async () => {
    // The test client's serializer passes Buffers through untouched: these bytes claim a 127-byte key field.
    const err = await status(call(kv, 'Put', Buffer.from([0x0a, 0x7f, 0x01]) as never));
    expect(err.code).not.toBe(S.OK);
    expect((await call<{ header: unknown }>(kv, 'Range', { key: b('after-garbage') })).header).toBeDefined();
  });

  it('survives non-HTTP/2 bytes on the port', async () => {
    const { connect } = await import('node:net');
    await new Promise<void>((resolve) => {
      const socket = connect(Number(h.endpoint.split(':')[1]), '127.0.0.1', () => {
        socket.end(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\xff garbage'));
      });
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
      socket.resume();
      setTimeout(() => socket.destroy(), 2000).unref();
    });
    expect((await call<{ header: unknown }>(kv, 'Range', { key: b('after-junk') })).header).toBeDefined();
  });
});
