/**
 * Differential test (L9): the same seeded single-client sequence of Range/Put/DeleteRange/Txn/Compact (and
 * HashKV) sent to a real etcd 3.4 over gRPC (the etcd3 package's raw stubs) and applied to our store;
 * responses compared field by field (headers aside; errors by etcd's exact message). Replay with
 * MVCC_DIFF_SEED. Without /usr/bin/etcd the test is skipped with a message, unless CI is set.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { Etcd3 } from 'etcd3';
import { afterAll, describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { EtcdError, type EtcdErrorCode } from '../../src/node/errors.js';
import { validateRequest } from '../../src/node/request/validate.js';
import {
  MvccError, type Compare, type DeleteRangeRequest, type KeyValue, type MvccErrorCode, type PutRequest, type RangeRequest,
  type RequestOp, type ResponseOp, type TxnRequest, type TxnResponse,
} from '../../src/mvcc/types.js';
import { Gen } from './gen.js';
import { FakeLeases } from './helpers.js';
import { Model } from './model.js';
import { validationCases } from '../node/request/validation-cases.js';

const etcdPath = '/usr/bin/etcd';
const haveEtcd = existsSync(etcdPath);
if (!haveEtcd && process.env.CI) throw new Error(`${etcdPath} is required in CI for the differential test`);
if (!haveEtcd) console.warn(`skipping the etcd differential test: ${etcdPath} not found`);

/** etcd's own texts, written out here so the comparison does not lean on our error table. */
const etcdMessages: Partial<Record<MvccErrorCode | EtcdErrorCode, string>> = {
  compacted: 'etcdserver: mvcc: required revision has been compacted',
  futureRev: 'etcdserver: mvcc: required revision is a future revision',
  keyNotFound: 'etcdserver: key not found',
  leaseNotFound: 'etcdserver: requested lease not found',
  duplicateKey: 'etcdserver: duplicate key given in txn request',
  tooManyOps: 'etcdserver: too many operations in txn request',
  emptyKey: 'etcdserver: key is not provided',
  valueProvided: 'etcdserver: value is provided',
  leaseProvided: 'etcdserver: lease is provided',
};

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
}, 20_000);

/**
 * Maintenance.HashKV, which the etcd3 package's bundled proto lacks: a raw unary call with hand-written
 * protobuf (request: 1 revision int64; response: 1 header, 2 hash uint32, 3 compact_revision int64).
 */
function hashKVClient(address: string): { hashKV(revision: number): Promise<{ hash: number; compactRevision: number }>; close(): void } {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const varint = (n: bigint): number[] => {
    const out: number[] = [];
    let v = BigInt.asUintN(64, n);
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    return out;
  };
  const decode = (b: Buffer): { hash: number; compactRevision: number } => {
    let pos = 0;
    const read = (): bigint => {
      let r = 0n;
      for (let shift = 0n; ; shift += 7n) {
        const byte = b[pos++]!;
        r |= BigInt(byte & 0x7f) << shift;
        if (byte < 0x80) return r;
      }
    };
    const out = { hash: 0, compactRevision: 0 };
    while (pos < b.length) {
      const tag = Number(read());
      if ((tag & 7) === 2) {
        const len = Number(read()); // not `pos += read()`: that reads pos before read() advances it
        pos += len;
      }
      else if ((tag >> 3) === 2) out.hash = Number(read());
      else if ((tag >> 3) === 3) out.compactRevision = Number(BigInt.asIntN(64, read()));
      else read();
    }
    return out;
  };
  return {
    hashKV: (revision) => new Promise((resolve, reject) => {
      client.makeUnaryRequest('/etcdserverpb.Maintenance/HashKV', (r: number) => Buffer.from(r === 0 ? [] : [0x08, ...varint(BigInt(r))]),
        decode, revision, (err, value) => (err ? reject(err) : resolve(value!)));
    }),
    close: () => client.close(),
  };
}

async function startEtcd(): Promise<{ etcd: Etcd3; hashKV: (revision: number) => Promise<{ hash: number; compactRevision: number }> }> {
  const dir = await mkdtemp(join(tmpdir(), 'etcetera-etcd-'));
  const [client, peer] = [await freePort(), await freePort()];
  const child: ChildProcess = spawn(etcdPath, [
    '--name', 'diff', '--data-dir', dir, '--logger', 'zap', '--log-level', 'error',
    '--listen-client-urls', `http://127.0.0.1:${client}`, '--advertise-client-urls', `http://127.0.0.1:${client}`,
    '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
    '--initial-cluster', `diff=http://127.0.0.1:${peer}`,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const etcd = new Etcd3({ hosts: `http://127.0.0.1:${client}` });
  const maintenance = hashKVClient(`127.0.0.1:${client}`);
  cleanups.push(async () => {
    etcd.close();
    maintenance.close();
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });
  for (let attempt = 0; ; attempt++) {
    try {
      await etcd.kv.range({ key: Buffer.from('probe') });
      return { etcd, hashKV: maintenance.hashKV };
    } catch (err) {
      if (attempt > 100 || child.exitCode !== null) throw new Error(`etcd did not start: ${String(err)}\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

// ---- our requests → etcd3's raw request objects ----
const buf = (u: Uint8Array): Buffer => Buffer.from(u);
/**
 * protobufjs puts an explicitly set empty bytes field on the wire, and etcd (gogo) then sees a non-nil empty
 * range_end, which it treats as "to the end of the keyspace". Go clients never send one; neither do we.
 */
const end = (u: Uint8Array): Buffer | undefined => (u.length === 0 ? undefined : Buffer.from(u));
const rangeOut = (r: RangeRequest) => ({
  key: buf(r.key), range_end: end(r.rangeEnd), limit: r.limit, revision: r.revision, sort_order: r.sortOrder, sort_target: r.sortTarget,
  keys_only: r.keysOnly, count_only: r.countOnly, min_mod_revision: r.minModRevision, max_mod_revision: r.maxModRevision,
  min_create_revision: r.minCreateRevision, max_create_revision: r.maxCreateRevision,
});
const putOut = (p: PutRequest) => ({ key: buf(p.key), value: buf(p.value), lease: p.lease.toString(), prev_kv: p.prevKv, ignore_value: p.ignoreValue, ignore_lease: p.ignoreLease });
const delOut = (d: DeleteRangeRequest) => ({ key: buf(d.key), range_end: end(d.rangeEnd), prev_kv: d.prevKv });
const compareOut = (c: Compare) => ({
  key: buf(c.key), range_end: end(c.rangeEnd), target: c.target, result: c.result,
  ...[{ version: c.version ?? 0 }, { create_revision: c.createRevision ?? 0 }, { mod_revision: c.modRevision ?? 0 },
    { value: buf(c.value ?? new Uint8Array(0)) }, { lease: (c.lease ?? 0n).toString() }][c.target],
});
const opOut = (op: RequestOp): object => ('range' in op ? { request_range: rangeOut(op.range) } : 'put' in op ? { request_put: putOut(op.put) }
  : 'deleteRange' in op ? { request_delete_range: delOut(op.deleteRange) } : { request_txn: txnOut(op.txn) });
const txnOut = (t: TxnRequest): object => ({ compare: t.compare.map(compareOut), success: t.success.map(opOut), failure: t.failure.map(opOut) });

// ---- etcd3's raw responses → our response shapes ----
/* eslint-disable @typescript-eslint/no-explicit-any */
const kvIn = (kv: any): KeyValue => ({
  key: new Uint8Array(kv.key), createRevision: Number(kv.create_revision), modRevision: Number(kv.mod_revision), version: Number(kv.version),
  value: new Uint8Array(kv.value), lease: BigInt(kv.lease),
});
const rev = (r: any): number => Number(r.header?.revision ?? 0);
const rangeIn = (r: any) => ({ kvs: r.kvs.map(kvIn), more: r.more, count: Number(r.count), revision: rev(r) });
const putIn = (r: any) => (r.prev_kv ? { prevKv: kvIn(r.prev_kv), revision: rev(r) } : { revision: rev(r) });
const delIn = (r: any) => ({ deleted: Number(r.deleted), prevKvs: r.prev_kvs.map(kvIn), revision: rev(r) });
const opIn = (op: any): ResponseOp => (op.response === 'response_range' ? { range: rangeIn(op.response_range) }
  : op.response === 'response_put' ? { put: putIn(op.response_put) }
  : op.response === 'response_delete_range' ? { deleteRange: delIn(op.response_delete_range) } : { txn: txnIn(op.response_txn) });
const txnIn = (r: any): TxnResponse => ({ succeeded: r.succeeded, responses: r.responses.map(opIn), revision: rev(r) });

async function etcdResult(f: () => Promise<unknown>): Promise<unknown> {
  try {
    return { ok: await f() };
  } catch (err: any) {
    // etcd3 decorates some messages ("Lease 5 NOT_FOUND: … is expired or revoked"): keep etcd's own text.
    const text = String(err?.details ?? err?.message);
    const at = text.indexOf('etcdserver:');
    return { err: (at >= 0 ? text.slice(at) : text).replace(/ is expired or revoked$/, '') };
  }
}
/* eslint-enable @typescript-eslint/no-explicit-any */

function errorResult(err: unknown): unknown {
  if (err instanceof MvccError) return { err: etcdMessages[err.code] ?? err.code };
  if (err instanceof EtcdError) return { err: err.message };
  throw err;
}

function ourResult(f: () => unknown): unknown {
  try {
    return { ok: f() };
  } catch (err) {
    return errorResult(err);
  }
}

async function ourResultAsync(f: () => Promise<unknown>): Promise<unknown> {
  try {
    return { ok: await f() };
  } catch (err) {
    return errorResult(err);
  }
}

function describe_(x: unknown): string {
  return JSON.stringify(x, (_k, v: unknown) => (v instanceof Uint8Array ? String.fromCharCode(...v) : typeof v === 'bigint' ? `${v}n` : v));
}

async function runDifferential(seed: number, steps: number): Promise<void> {
  const { etcd, hashKV } = await startEtcd();
  for (const id of [1, 2]) await etcd.leaseClient.leaseGrant({ TTL: 3600, ID: id });
  const leases = new FakeLeases();
  leases.grant(1n);
  leases.grant(2n);
  const store = await KvStore.open(new MemoryBackend(), { leases });
  const model = new Model(); // drives the generator's revision choices only
  const gen = new Gen(new Prng(seed), model);
  const sync = (): void => {
    model.rev = store.revision;
    model.compactRev = store.compactRevision;
  };
  let hashesCompared = 0;
  for (let step = 0; step < steps; step++) {
    const r = gen.int(100);
    const where = `seed ${seed} step ${step}`;
    if (r < 25) {
      const req = gen.range();
      const theirs = await etcdResult(async () => rangeIn(await etcd.kv.range(rangeOut(req))));
      expect(ourResult(() => store.range(req)), `${where} range ${describe_(req)}`).toEqual(theirs);
    } else if (r < 92) {
      const op = gen.op(0);
      const ours = ourResult(() => {
        validateRequest(op);
        return 'put' in op ? store.put(op.put) : 'deleteRange' in op ? store.deleteRange(op.deleteRange) : 'txn' in op ? store.txn(op.txn) : store.range(op.range);
      });
      const theirs = await etcdResult(async () => ('put' in op ? putIn(await etcd.kv.put(putOut(op.put)))
        : 'deleteRange' in op ? delIn(await etcd.kv.deleteRange(delOut(op.deleteRange)))
        : 'txn' in op ? txnIn(await etcd.kv.txn(txnOut(op.txn) as never)) : rangeIn(await etcd.kv.range(rangeOut(op.range)))));
      expect(ours, `${where} ${describe_(op)}`).toEqual(theirs);
    } else if (r < 96) {
      const at = gen.rev();
      const ours = ourResult(() => (store.compact(at), {}));
      const theirs = await etcdResult(async () => (await etcd.kv.compact({ revision: at, physical: true }), {}));
      expect(ours, `${where} compact ${at}`).toEqual(theirs);
    } else {
      const at = gen.rev();
      // etcd 3.4 refuses HashKV at exactly the compact revision; 3.5 (which we follow) allows it.
      if (at === store.compactRevision) continue;
      const ours = await ourResultAsync(async () => {
        const h = await store.hashKV(at);
        return { hash: h.hash, compactRevision: h.compactRevision };
      });
      const theirs = await etcdResult(async () => {
        return hashKV(at);
      });
      expect(ours, `${where} hashKV ${at}`).toEqual(theirs);
      if (typeof theirs === 'object' && theirs !== null && 'ok' in theirs) hashesCompared++;
    }
    sync();
  }
  // The sequence must have exercised the comparison that matters most (equal hashes, not equal errors).
  expect(hashesCompared).toBeGreaterThan(steps / 100);
  expect(store.compactRevision).toBeGreaterThan(0);
}

describe.skipIf(!haveEtcd)('differential against etcd 3.4', () => {
  it('refuses malformed requests with etcd\'s errors', async () => {
    const { etcd } = await startEtcd();
    for (const { name, op, error } of validationCases) {
      const ours = ourResult(() => (validateRequest(op), {}));
      const theirs = await etcdResult(async () => ('put' in op ? await etcd.kv.put(putOut(op.put)) : 'deleteRange' in op ? await etcd.kv.deleteRange(delOut(op.deleteRange))
        : 'txn' in op ? await etcd.kv.txn(txnOut(op.txn) as never) : await etcd.kv.range(rangeOut(op.range))));
      const etcdOutcome = typeof theirs === 'object' && theirs !== null && 'err' in theirs ? theirs : { ok: {} };
      expect(ours, name).toEqual(etcdOutcome);
      expect(ours, name).toEqual(error === null ? { ok: {} } : { err: etcdMessages[error] });
    }
  }, 60_000);

  const seed = Number(process.env.MVCC_DIFF_SEED ?? 4242);
  it(`answers a seeded sequence exactly as etcd (seed ${seed})`, async () => {
    await runDifferential(seed, Number(process.env.MVCC_DIFF_STEPS ?? 400));
  }, 120_000);
});
