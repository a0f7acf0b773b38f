/**
 * Commit-only hard states (Raft's mustSync = false) cost no write and no fsync of their own: they ride with
 * the next batch, resolve in call order, and never let an older term or vote overwrite a newer one.
 */
import { describe, expect, it } from 'vitest';
import type { Entry } from '../../src/raft/types.js';
import { Wal, type WalOptions } from '../../src/wal/wal.js';
import { SimFs } from './sim-fs.js';
import { settle } from '../settle.js';

const dir = '/d';
const entry = (index: number, term = 1): Entry => ({ term, index, type: 0, data: new Uint8Array(16).fill(index) });
const opts = (fs: SimFs, extra: Partial<WalOptions> = {}): WalOptions => ({
  fs,
  profile: 'ssd',
  tuning: { segmentBytes: 1 << 20, preallocate: false, batchBytesMax: 1 << 16 },
  ...extra,
});

describe('deferred commit-only hard states', () => {
  it('cost no sync, and are written with the next synced batch', async () => {
    const fs = new SimFs({});
    const { wal } = await Wal.open(dir, opts(fs));
    await wal.save({ hardState: { term: 1, vote: 1n, commit: 0 }, entries: [entry(1), entry(2)] });
    const syncs = wal.metrics.syncs;
    await wal.save({ hardState: { term: 1, vote: 1n, commit: 2 }, sync: false });
    expect(wal.metrics.syncs).toBe(syncs);
    await wal.save({ entries: [entry(3)] });
    expect(wal.metrics.syncs).toBe(syncs + 1);
    await wal.close();
    const { wal: again, state } = await Wal.open(dir, opts(fs));
    expect(state.hardState).toEqual({ term: 1, vote: 1n, commit: 2 });
    expect(state.entries.map((e) => e.index)).toEqual([1, 2, 3]);
    await again.close();
  });

  it('resolve only after every earlier save is durable', async () => {
    let held = false;
    let waiters: (() => void)[] = [];
    const release = (): void => {
      held = false;
      for (const w of waiters.splice(0)) w();
    };
    const fs = new SimFs({ beforeSync: () => (held ? new Promise<void>((r) => waiters.push(r)) : Promise.resolve()) });
    const { wal } = await Wal.open(dir, opts(fs));
    held = true;
    const order: string[] = [];
    const first = wal.save({ hardState: { term: 1, vote: 1n, commit: 0 }, entries: [entry(1)] }).then(() => order.push('entries'));
    const commitOnly = wal.save({ hardState: { term: 1, vote: 1n, commit: 1 }, sync: false }).then(() => order.push('commit'));
    await settle();
    expect(order).toEqual([]);
    release();
    await Promise.all([first, commitOnly]);
    expect(order).toEqual(['entries', 'commit']);
    await wal.close();
  });

  it('never write an older term or vote over a newer hard state', async () => {
    const fs = new SimFs({});
    const { wal } = await Wal.open(dir, opts(fs));
    await wal.save({ hardState: { term: 1, vote: 1n, commit: 0 }, entries: [entry(1)] });
    // commit-only at term 1, then a vote in term 2 (synced), then the next batch.
    void wal.save({ hardState: { term: 1, vote: 1n, commit: 1 }, sync: false });
    await wal.save({ hardState: { term: 2, vote: 3n, commit: 1 } });
    await wal.save({ entries: [entry(2, 2)] });
    await wal.close();
    const { wal: again, state } = await Wal.open(dir, opts(fs));
    expect(state.hardState).toEqual({ term: 2, vote: 3n, commit: 1 });
    await again.close();
  });
});
