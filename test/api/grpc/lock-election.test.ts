/**
 * v3lockpb.Lock and v3electionpb.Election over gRPC on a real in-process node: the etcd recipes (keys `name/<lease hex>`
 * ordered by create revision), hand-over on unlock, resign and lease revocation, and etcd's error texts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { b, call } from './harness.js';
import { startNodeHarness, type NodeHarness } from './node-harness.js';

let h: NodeHarness;
let lockClient: Record<string, Function>;
let electionClient: grpc.Client & Record<string, Function>;
let lease: Record<string, Function>;

beforeAll(async () => {
  h = await startNodeHarness();
  lockClient = h.client('v3lockpb.Lock');
  electionClient = h.client('v3electionpb.Election');
  lease = h.client('etcdserverpb.Lease');
});
afterAll(() => h.close());

async function grant(): Promise<string> {
  const r = await call<{ ID: { toString(): string } }>(lease, 'LeaseGrant', { TTL: 60 });
  return r.ID.toString();
}

const hex = (id: string): string => BigInt(id).toString(16);
const settledWithin = <T>(p: Promise<T>, ms: number): Promise<boolean> =>
  Promise.race([p.then(() => true, () => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe('Lock', () => {
  it('takes a free lock at once under name/<lease hex> and releases it on Unlock', async () => {
    const l1 = await grant();
    const r = await call<{ key: Buffer; header: { revision: unknown } }>(lockClient, 'Lock', { name: b('free'), lease: l1 });
    expect(r.key.toString()).toBe(`free/${hex(l1)}`);
    await call(lockClient, 'Unlock', { key: r.key });
    const kv = h.client('etcdserverpb.KV');
    const got = await call<{ kvs: unknown[] }>(kv, 'Range', { key: r.key });
    expect(got.kvs).toHaveLength(0);
  });

  it('makes a second contender wait until the holder unlocks', async () => {
    const [l1, l2] = [await grant(), await grant()];
    const first = await call<{ key: Buffer }>(lockClient, 'Lock', { name: b('q'), lease: l1 });
    const second = call<{ key: Buffer }>(lockClient, 'Lock', { name: b('q'), lease: l2 });
    expect(await settledWithin(second, 300)).toBe(false);
    await call(lockClient, 'Unlock', { key: first.key });
    expect((await second).key.toString()).toBe(`q/${hex(l2)}`);
  });

  it('hands the lock over when the holder\'s lease is revoked (the holder died)', async () => {
    const [l1, l2] = [await grant(), await grant()];
    await call(lockClient, 'Lock', { name: b('dies'), lease: l1 });
    const second = call<{ key: Buffer }>(lockClient, 'Lock', { name: b('dies'), lease: l2 });
    expect(await settledWithin(second, 200)).toBe(false);
    await call(lease, 'LeaseRevoke', { ID: l1 });
    expect((await second).key.toString()).toBe(`dies/${hex(l2)}`);
  });

  it('grants a session lease itself when the request names none', async () => {
    const r = await call<{ key: Buffer }>(lockClient, 'Lock', { name: b('nolease') });
    const id = BigInt(`0x${r.key.toString().split('/')[1]}`);
    const ttl = await call<{ grantedTTL: { toString(): string } }>(lease, 'LeaseTimeToLive', { ID: id.toString() });
    expect(ttl.grantedTTL.toString()).toBe('60');
  });

  it('refuses a lease that does not exist with etcd\'s message', async () => {
    await expect(call(lockClient, 'Lock', { name: b('x'), lease: '12345' })).rejects.toThrow('etcdserver: requested lease not found');
  });
});

describe('Election', () => {
  it('elects the first candidate, queues the second, and hands over on resign', async () => {
    const [l1, l2] = [await grant(), await grant()];
    const c1 = await call<{ leader: Record<string, unknown> }>(electionClient, 'Campaign', { name: b('e1'), lease: l1, value: b('one') });
    expect((c1.leader.key as Buffer).toString()).toBe(`e1/${hex(l1)}`);
    const c2 = call<{ leader: Record<string, unknown> }>(electionClient, 'Campaign', { name: b('e1'), lease: l2, value: b('two') });
    expect(await settledWithin(c2, 300)).toBe(false);
    const now = await call<{ kv: { value: Buffer } }>(electionClient, 'Leader', { name: b('e1') });
    expect(now.kv.value.toString()).toBe('one');
    await call(electionClient, 'Resign', { leader: c1.leader });
    await c2;
    expect((await call<{ kv: { value: Buffer } }>(electionClient, 'Leader', { name: b('e1') })).kv.value.toString()).toBe('two');
  });

  it('proclaims while leading and refuses a stale leader key', async () => {
    const l1 = await grant();
    const c1 = await call<{ leader: Record<string, unknown> }>(electionClient, 'Campaign', { name: b('e2'), lease: l1, value: b('a') });
    await call(electionClient, 'Proclaim', { leader: c1.leader, value: b('b') });
    expect((await call<{ kv: { value: Buffer } }>(electionClient, 'Leader', { name: b('e2') })).kv.value.toString()).toBe('b');
    await call(electionClient, 'Resign', { leader: c1.leader });
    await expect(call(electionClient, 'Proclaim', { leader: c1.leader, value: b('c') })).rejects.toMatchObject({
      code: grpc.status.UNKNOWN,
      details: 'election: not leader',
    });
  });

  it('answers etcd\'s errors for no leader and a missing leader key', async () => {
    await expect(call(electionClient, 'Leader', { name: b('nobody') })).rejects.toMatchObject({ details: 'election: no leader' });
    await expect(call(electionClient, 'Resign', {})).rejects.toMatchObject({ details: '"leader" field must be provided' });
  });

  it('streams the leader, its proclamations and the next leader to an observer', async () => {
    const [l1, l2] = [await grant(), await grant()];
    const seen: string[] = [];
    const stream = electionClient.Observe!({ name: b('e3') }) as grpc.ClientReadableStream<{ kv: { value: Buffer } }>;
    stream.on('data', (r) => seen.push(r.kv.value.toString()));
    stream.on('error', () => {});
    const c1 = await call<{ leader: Record<string, unknown> }>(electionClient, 'Campaign', { name: b('e3'), lease: l1, value: b('x') });
    const c2 = call(electionClient, 'Campaign', { name: b('e3'), lease: l2, value: b('y') });
    await call(electionClient, 'Proclaim', { leader: c1.leader, value: b('x2') });
    await call(lease, 'LeaseRevoke', { ID: l1 });
    await c2;
    const deadline = Date.now() + 5000;
    while (seen.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    stream.cancel();
    expect(seen).toEqual(['x', 'x2', 'y']);
  });
});
