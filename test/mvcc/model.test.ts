/**
 * Model-based test: seeded random sequences of put/delete/txn/compact/range (historical revisions, limits,
 * sorts, filters) applied to the store and to the naive model (model.ts), on both backends, with crashes at
 * random points: the store is reopened from what reached the backend and the entries after its consistent
 * index are replayed, as Raft would (W12); answers must stay identical. Replay a failure with its seed.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import type { Backend } from '../../src/mvcc/backend.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { LevelBackend } from '../../src/storage/level-backend.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { validateRequest } from '../../src/node/request/validate.js';
import { MvccError, type RangeRequest, type RequestOp } from '../../src/mvcc/types.js';
import { Gen } from './gen.js';
import { FakeLeases } from './helpers.js';
import { Model } from './model.js';

type Entry = { kind: 'put' | 'deleteRange' | 'txn' | 'compact'; op: RequestOp | number };

function capture(f: () => unknown): unknown {
  try {
    const v = f();
    return v !== null && typeof v === 'object' && 'physicalDone' in v ? 'compacted-ok' : { ok: v };
  } catch (err) {
    if (err instanceof MvccError) return { err: err.code };
    throw err;
  }
}

async function captureAsync(f: () => Promise<unknown>): Promise<unknown> {
  try {
    return { ok: await f() };
  } catch (err) {
    if (err instanceof MvccError) return { err: err.code };
    throw err;
  }
}

function applyEntry(target: KvStore | Model, e: Entry): unknown {
  return capture(() => {
    if (e.kind === 'compact') {
      const r = target.compact(e.op as number);
      if (r !== undefined) r.physicalDone.catch(() => {});
      return r ?? { physicalDone: null };
    }
    const op = e.op as RequestOp;
    if ('put' in op) return target.put(op.put);
    if ('deleteRange' in op) return target.deleteRange(op.deleteRange);
    if ('txn' in op) return target.txn(op.txn);
    throw new Error('not an entry');
  });
}

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

interface Storage {
  open(): Promise<Backend>;
  /** Crash: whatever reached the backend survives, the store's memory does not. */
  crash(store: KvStore, backend: Backend, gen: Gen): Promise<Backend>;
}

const memoryStorage = (): Storage => ({
  async open() {
    return new MemoryBackend();
  },
  async crash(store, backend, gen) {
    // Sometimes the crash lands while a flush or compaction batch is still in flight.
    if (gen.chance(0.3)) await store.idle();
    else for (let ticks = gen.int(8); ticks > 0; ticks--) await Promise.resolve();
    return (backend as MemoryBackend).clone();
  },
});

const levelStorage = async (): Promise<Storage> => {
  const dir = await mkdtemp(join(tmpdir(), 'etcetera-model-'));
  dirs.push(dir);
  return {
    open: () => LevelBackend.open(dir),
    async crash(store, backend) {
      await store.idle();
      await backend.close();
      return LevelBackend.open(dir);
    },
  };
};

async function run(seed: number, storage: Storage, steps: number): Promise<void> {
  const rng = new Prng(seed);
  const model = new Model();
  model.leases = new Set([1n, 2n]);
  const gen = new Gen(rng, model);
  const leases = (): FakeLeases => { const f = new FakeLeases(); f.grant(1n); f.grant(2n); return f; };
  let backend = await storage.open();
  let hooks = leases();
  let store = await KvStore.open(backend, { leases: hooks });
  const log: { entry: Entry; result: unknown }[] = [];
  for (let step = 0; step < steps; step++) {
    const r = gen.int(100);
    if (r < 20) {
      const req = gen.range();
      expect(capture(() => store.range(req)), `step ${step} range`).toEqual(capture(() => model.range(req)));
    } else if (r < 85) {
      const op = r < 80 ? gen.op(0) : null;
      const entry: Entry = op === null ? { kind: 'compact', op: gen.rev() } : { kind: 'put' in op ? 'put' : 'deleteRange' in op ? 'deleteRange' : 'txn', op };
      if (op !== null && 'range' in op) continue;
      if (op !== null) {
        try {
          validateRequest(op);
        } catch {
          continue;
        }
      }
      store.setConsistentIndex(log.length + 1);
      const result = applyEntry(store, entry);
      expect(result, `step ${step} ${entry.kind}`).toEqual(applyEntry(model, entry));
      log.push({ entry, result });
      if (gen.chance(0.3)) {
        const flushing = store.flush();
        if (gen.chance(0.5)) await flushing;
      }
    } else if (r < 93) {
      const from = Math.max(model.compactRev + 1, gen.int(model.rev + 1));
      expect(capture(() => store.readEvents(from, model.rev))).toEqual(capture(() => model.events(from, model.rev)));
      const rev = gen.rev();
      const mine = await captureAsync(() => store.hashKV(rev));
      const theirs = capture(() => model.hashKV(rev));
      expect(typeof mine === 'object' && mine !== null && 'ok' in mine ? (mine.ok as { hash: number }).hash : mine).toEqual(
        typeof theirs === 'object' && theirs !== null && 'ok' in theirs ? theirs.ok : theirs);
    } else {
      backend = await storage.crash(store, backend, gen);
      hooks = leases();
      store = await KvStore.open(backend, { leases: hooks });
      expect(store.consistentIndex).toBeLessThanOrEqual(log.length);
      for (let i = store.consistentIndex; i < log.length; i++) {
        store.setConsistentIndex(i + 1);
        expect(applyEntry(store, log[i]!.entry), `replay of entry ${i + 1} after crash at step ${step}`).toEqual(log[i]!.result);
      }
      expect(store.revision).toBe(model.rev);
      expect(store.compactRevision).toBe(model.compactRev);
    }
    store.checkInvariants();
  }
  const all: RangeRequest = { ...gen.range(), key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]), revision: 0, limit: 0, countOnly: false, keysOnly: false,
    minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0 };
  expect(store.range(all)).toEqual(model.range(all));
  // The lessor was told about every attach and detach: its key sets match the keys' leases.
  const attached = new Map<bigint, string[]>();
  for (const kv of store.range(all).kvs) if (kv.lease !== 0n) attached.set(kv.lease, [...(attached.get(kv.lease) ?? []), new TextDecoder().decode(kv.key)]);
  for (const id of [1n, 2n]) expect([...hooks.leases.get(id)!].sort(), `lease ${id}`).toEqual((attached.get(id) ?? []).sort());
  await store.idle();
  await backend.close();
}

const seeds = (n: number, base: number): number[] => Array.from({ length: n }, (_, i) => base + i);

describe('the store agrees with the reference model', () => {
  it.each(seeds(Number(process.env.MVCC_MODEL_SEEDS ?? 40), 1000))('on the memory backend, seed %i', async (seed) => {
    try {
      await run(seed, memoryStorage(), 300);
    } catch (err) {
      throw new Error(`model test failed; replay with seed ${seed} (memory backend): ${String(err)}`, { cause: err });
    }
  });

  it.each(seeds(6, 2000))('on the LevelDB backend, seed %i', async (seed) => {
    try {
      await run(seed, await levelStorage(), 200);
    } catch (err) {
      throw new Error(`model test failed; replay with seed ${seed} (level backend): ${String(err)}`, { cause: err });
    }
  });
});
