/**
 * Group commit, ordering, batch caps, and fail-stop on a failed write or sync (W7), on the simulated FS.
 */
import { describe, expect, it } from 'vitest';
import type { Entry } from '../../src/raft/types.js';
import { WalClosedError, WalFatalError } from '../../src/wal/errors.js';
import type { FilePort } from '../../src/wal/fs-port.js';
import { Wal, type WalOptions } from '../../src/wal/wal.js';
import { SimFs } from './sim-fs.js';
import { isDone, settle, VirtualTime } from './virtual-time.js';

const dir = '/g';
const entry = (index: number, size = 32): Entry => ({ term: 1, index, type: 0, data: new Uint8Array(size).fill(index & 0xff) });
const opts = (fs: SimFs, tuning: WalOptions['tuning'] = {}): WalOptions => ({
  fs,
  profile: 'ssd',
  tuning: { segmentBytes: 1 << 20, preallocate: false, batchBytesMax: 1 << 16, ...tuning },
});

/** A gate the simulated syncs wait on, so a test controls when a sync "completes" and sees when one arrives. */
function gate() {
  let open = true;
  let waiters: (() => void)[] = [];
  let arrivals = 0;
  let watchers: { n: number; resolve: () => void }[] = [];
  return {
    close: () => void (open = false),
    release: () => {
      open = true;
      const w = waiters;
      waiters = [];
      for (const f of w) f();
    },
    wait: (): Promise<void> => {
      if (open) return Promise.resolve();
      arrivals++;
      for (const w of watchers.filter((x) => x.n <= arrivals)) w.resolve();
      watchers = watchers.filter((x) => x.n > arrivals);
      return new Promise<void>((r) => waiters.push(r));
    },
    /** Resolves once `n` syncs in all have reached the closed gate. */
    arrived: (n: number): Promise<void> =>
      arrivals >= n ? Promise.resolve() : new Promise<void>((resolve) => watchers.push({ n, resolve })),
  };
}

describe('group commit', () => {
  it('saves arriving while a sync is in flight share the next sync, and resolve in call order', async () => {
    const g = gate();
    const fs = new SimFs({ beforeSync: () => g.wait() });
    const { wal } = await Wal.open(dir, opts(fs));
    const syncsBefore = wal.metrics.syncs;
    g.close();
    const order: number[] = [];
    const first = wal.save({ entries: [entry(1)] }).then(() => order.push(1));
    await g.arrived(1); // the first batch is now waiting inside its sync
    const rest: Promise<unknown>[] = [];
    for (let i = 2; i <= 50; i++) rest.push(wal.save({ entries: [entry(i)] }).then(() => order.push(i)));
    await settle();
    expect(order).toEqual([]); // nothing acknowledged before its sync
    g.release();
    await Promise.all([first, ...rest]);
    expect(order).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(wal.metrics.syncs - syncsBefore).toBe(2);
    expect(wal.metrics.recordsPerBatch.count).toBe(2);
    await wal.close();
  });

  it('one appender at a time waits for exactly one sync per save', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, opts(fs));
    for (let i = 1; i <= 100; i++) await wal.save({ entries: [entry(i)], hardState: { term: 1, vote: 1n, commit: i - 1 } });
    expect(wal.metrics.syncs).toBe(100);
    expect(wal.metrics.saves).toBe(100);
    await wal.close();
  });

  it('a batch is capped in bytes', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, opts(fs, { batchBytesMax: 4096 }));
    const saves: Promise<void>[] = [];
    for (let i = 1; i <= 40; i++) saves.push(wal.save({ entries: [entry(i, 1000)] }));
    await Promise.all(saves);
    expect(wal.metrics.batches).toBeGreaterThanOrEqual(10);
    const writes = fs.log.filter((l) => / write .*\.wal @/.test(l) && !l.includes('+64'));
    for (const w of writes) expect(Number(w.split('+')[1])).toBeLessThanOrEqual(4096 + 1100);
    await wal.close();
    const { wal: w2, state } = await Wal.open(dir, opts(fs));
    expect(state.entries).toHaveLength(40);
    await w2.close();
  });

  it('small batches are written on the calling thread only when the profile says so', async () => {
    for (const [inlineWriteBytesMax, expectNow] of [[64 * 1024, true], [0, false]] as const) {
      const fs = new SimFs();
      const calls: string[] = [];
      const spying: typeof fs.open = async (path, mode) => {
        const f = await SimFs.prototype.open.call(fs, path, mode);
        if (!path.endsWith('.wal.tmp') && !path.endsWith('.wal')) return f;
        return {
          path: f.path,
          write: (d, n, p) => (calls.push('write'), f.write(d, n, p)),
          writeNow: (d, n, p) => (calls.push('writeNow'), f.writeNow!(d, n, p)),
          read: (d, n, p) => f.read(d, n, p),
          datasync: () => f.datasync(),
          sync: () => f.sync(),
          truncate: (n) => f.truncate(n),
          size: () => f.size(),
          close: () => f.close(),
        } satisfies FilePort;
      };
      fs.open = spying;
      const { wal } = await Wal.open(dir, opts(fs, { inlineWriteBytesMax }));
      calls.length = 0;
      await wal.save({ entries: [entry(1)] });
      await wal.save({ entries: [entry(2, 70 * 1024)] }); // over the inline cap: the thread pool
      expect(calls).toEqual(expectNow ? ['writeNow', 'write'] : ['write', 'write']);
      await wal.close();
    }
  });

  it('one write per batch, then one fdatasync', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, opts(fs));
    const from = fs.log.length;
    await Promise.all(Array.from({ length: 30 }, (_, i) => wal.save({ entries: [entry(i + 1)] })));
    // Only the active segment, seq 0 (still named by the path it was created under; the next segment is
    // being prepared in the background meanwhile).
    const ops = fs.log.slice(from).filter((l) => l.includes('/0000000000000000.wal.tmp')).map((l) => l.split(' ')[1]);
    expect(ops).toEqual(['write', 'datasync', 'write', 'datasync']);
    await wal.close();
  });

  it('a save that replaces a suffix and one that would overwrite committed entries', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, opts(fs));
    await wal.save({ entries: [entry(1), entry(2), entry(3)], hardState: { term: 1, vote: 0n, commit: 1 } });
    await wal.save({ entries: [{ ...entry(2), term: 2 }] });
    expect(() => wal.save({ entries: [entry(1)] })).toThrow(/overwrite committed/);
    expect(() => wal.save({ entries: [entry(9)] })).toThrow(/gap/);
    await wal.close();
    const { wal: w2, state } = await Wal.open(dir, opts(fs));
    expect(state.entries.map((e) => [e.index, e.term])).toEqual([[1, 1], [2, 2]]);
    await w2.close();
  });
});

describe('a failed write or sync is fatal (W7)', () => {
  for (const op of ['datasync', 'write']) {
    it(`${op} EIO rejects every pending save, calls onFatal once, never retries or acknowledges`, async () => {
      let failing = false;
      const g = gate();
      const fs = new SimFs({ failOp: (o) => failing && o.startsWith(op), beforeSync: () => g.wait() });
      const fatals: WalFatalError[] = [];
      const { wal } = await Wal.open(dir, { ...opts(fs), onFatal: (e) => fatals.push(e) });
      await wal.save({ entries: [entry(1)] });
      failing = true;
      g.close();
      const results: string[] = [];
      const saves = Array.from({ length: 10 }, (_, i) =>
        wal.save({ entries: [entry(i + 2)] }).then(
          () => results.push('ack'),
          (e: unknown) => results.push(e instanceof WalFatalError ? 'fatal' : 'other'),
        ),
      );
      g.release();
      await Promise.all(saves);
      expect(results).toEqual(Array(10).fill('fatal'));
      expect(fatals).toHaveLength(1);
      expect(fatals[0]!.message).toMatch(op === 'write' ? /write failed \(EIO/ : /fdatasync failed \(EIO/);
      const opsAfter = fs.ops;
      await expect(wal.save({ entries: [entry(20)] })).rejects.toBe(fatals[0]);
      await settle();
      expect(fs.ops).toBe(opsAfter); // no retry
      await wal.close();
      await expect(wal.save({ entries: [entry(21)] })).rejects.toBeInstanceOf(WalFatalError);
    });
  }

  it('a failed snapshot file write is fatal and nothing is written after it', async () => {
    let failing = false;
    const fs = new SimFs({ failOp: (o) => failing && o.startsWith('sync') && o.includes('.snap') });
    const fatals: WalFatalError[] = [];
    const { wal } = await Wal.open(dir, { ...opts(fs), onFatal: (e) => fatals.push(e) });
    await wal.save({ entries: [entry(1)], hardState: { term: 1, vote: 0n, commit: 1 } });
    failing = true;
    const snap = wal.saveSnapshot({ meta: { index: 1, term: 1, confState: { voters: [1n], learners: [] } }, data: Uint8Array.of(1) });
    const after = wal.save({ entries: [entry(2)] });
    await expect(snap).rejects.toBeInstanceOf(WalFatalError);
    await expect(after).rejects.toBeInstanceOf(WalFatalError);
    expect(fatals).toHaveLength(1);
    expect(fatals[0]!.message).toContain('snapshot file write failed');
    const failedAt = fs.log.findIndex((l) => l.includes('.snap') && l.includes(' sync '));
    expect(fs.log.slice(failedAt + 1).filter((l) => / (write|datasync) /.test(l) && !l.includes('.wal.tmp @0 +64'))).toEqual([]);
    await wal.close();
  });

  it('a failed preallocation of the next segment is fatal', async () => {
    const fs = new SimFs({ failOp: (o) => o.startsWith('create') && o.includes('0000000000000001.wal.tmp') });
    const fatals: WalFatalError[] = [];
    const { wal } = await Wal.open(dir, { ...opts(fs), onFatal: (e) => fatals.push(e) });
    // The next segment is prepared once the active one (1 MiB here) is half full.
    const big = Array.from({ length: 40 }, (_, i) => entry(i + 1, 16 * 1024));
    await wal.save({ entries: big }).catch(() => undefined); // may already fail: preparation runs beside it
    await settle();
    expect(fatals.map((e) => e.message)).toEqual([expect.stringContaining('segment preparation failed (EIO')]);
    await expect(wal.save({ entries: [entry(41)] })).rejects.toBe(fatals[0]);
    await wal.close();
  });

  it('a next segment that finds no space is prepared again at rotation, not fatal (issue 32)', async () => {
    // The first try at segment 1 meets a full disk; the disk watch has made room by the rotation.
    let tries = 0;
    const fs = new SimFs({ failOp: (o) => (o.startsWith('create') && o.includes('0000000000000001.wal.tmp') && tries++ === 0 ? 'ENOSPC' : false) });
    const fatals: WalFatalError[] = [];
    const lines: string[] = [];
    const { wal } = await Wal.open(dir, { ...opts(fs), onFatal: (e) => fatals.push(e), logger: (l) => lines.push(l) });
    // The next segment is prepared once the active one (1 MiB here) is half full; 80 × 16 KiB rotates.
    for (let i = 1; i <= 80; i++) await wal.save({ entries: [entry(i, 16 * 1024)] });
    expect(fatals).toEqual([]);
    expect(tries).toBe(2);
    expect(lines.filter((l) => l.includes('no space to prepare the next segment'))).toHaveLength(1);
    expect((await fs.list(dir)).filter((f) => f.endsWith('.wal'))).toHaveLength(2);
    await wal.close();
  });

  it('saves after close are refused', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, opts(fs));
    await wal.close();
    await expect(wal.save({ entries: [entry(1)] })).rejects.toBeInstanceOf(WalClosedError);
  });
});

describe('the commit-delay window', () => {
  // The window's timer and the syncs' latency run on virtual time: a window that ends "early" ends with no time
  // passed at all, and one that stays open is seen open however slow the machine is.
  const windowOf = (fs: SimFs, time: VirtualTime, commitDelayMs = 1000): WalOptions => ({ ...opts(fs, { commitDelayMs }), timer: time });
  /** A WAL with a 1 s window whose first save (entry 1) is held inside its sync. */
  const heldWal = async () => {
    const g = gate();
    const time = new VirtualTime();
    const { wal } = await Wal.open(dir, windowOf(new SimFs({ beforeSync: () => g.wait() }), time));
    g.close();
    const head = wal.save({ entries: [entry(1)] });
    await g.arrived(1);
    return { g, wal, head, time };
  };

  it('ends once the writers of the last sync are back beside those queued behind it', async () => {
    const { g, wal, head, time } = await heldWal();
    const two = [2, 3].map((i) => wal.save({ entries: [entry(i)] }));
    const syncsBefore = wal.metrics.syncs;
    g.release();
    await head; // entry 1 is durable: the window now waits for its writer beside entries 2 and 3
    await settle();
    expect(wal.metrics.syncs).toBe(syncsBefore + 1); // two of three: still open
    const back = wal.save({ entries: [entry(4)] }); // the writer of entry 1, answered, writes again
    expect(await isDone(Promise.all([...two, back]))).toBe(true); // at once: no virtual time passed
    expect(time.now).toBe(0);
    expect(wal.metrics.syncs - syncsBefore).toBe(2);
    await wal.close();
  });

  it('ends as soon as the queue holds as many entries as the last sync carried, and not before', async () => {
    const { g, wal, head, time } = await heldWal();
    const four = [2, 3, 4, 5].map((i) => wal.save({ entries: [entry(i)] }));
    g.release();
    await head;
    const back = wal.save({ entries: [entry(6)] });
    await time.run(Promise.all([...four, back])); // the last sync carried five entries, nothing queued behind it
    const syncsBefore = wal.metrics.syncs;
    const startedAt = time.now;
    let acked = 0;
    const some = [7, 8, 9, 10].map((i) => wal.save({ entries: [entry(i)] }).then(() => acked++));
    await settle();
    expect(acked).toBe(0); // four of five: the window is still open
    const fifth = wal.save({ entries: [entry(11)] });
    expect(await isDone(Promise.all([...some, fifth]))).toBe(true);
    expect(time.now).toBe(startedAt);
    expect(wal.metrics.syncs - syncsBefore).toBe(1);
    await wal.close();
  });

  it('a window nobody fills ends when its time is up, not before', async () => {
    const { g, wal, head, time } = await heldWal();
    const two = [2, 3].map((i) => wal.save({ entries: [entry(i)] }));
    g.release();
    await head; // the window waits for entry 1's writer, who never comes back
    await time.advance(999);
    expect(await isDone(Promise.all(two))).toBe(false);
    await time.advance(1);
    expect(await isDone(Promise.all(two))).toBe(true);
    await wal.close();
  });

  it('closed-loop writers share one sync instead of two groups taking turns', async () => {
    // 16 writers, each saving again as soon as its save is durable; every sync takes 20 ms, window 4 ms.
    const g = gate();
    const time = new VirtualTime();
    const fs = new SimFs({ beforeSync: async () => { await g.wait(); await time.sleep(20); } });
    const { wal } = await time.run(Wal.open(dir, windowOf(fs, time, 4))); // opening syncs too
    let next = 0;
    const writer = async (rounds: number): Promise<void> => {
      for (let i = 0; i < rounds; i++) await wal.save({ entries: [entry(++next)] });
    };
    g.close();
    const head = wal.save({ entries: [entry(++next)] });
    await g.arrived(1);
    const groupA = Array.from({ length: 8 }, () => writer(12)); // queued behind the held sync
    const syncsBefore = wal.metrics.syncs;
    g.release();
    await time.run(head);
    await time.advance(10); // group A's first sync is in flight
    const groupB = Array.from({ length: 8 }, () => writer(12));
    await time.run(Promise.all([...groupA, ...groupB]));
    // Two groups taking turns need 24 syncs (8 entries each); merged, the 16 share each sync after the first two.
    expect(wal.metrics.saves).toBe(1 + 16 * 12);
    expect(wal.metrics.syncs - syncsBefore).toBeLessThanOrEqual(16);
    await time.run(wal.close());
  });

  it('a lone writer never waits for the window', async () => {
    const time = new VirtualTime();
    const { wal } = await Wal.open(dir, windowOf(new SimFs(), time));
    for (let i = 1; i <= 20; i++) expect(await isDone(wal.save({ entries: [entry(i)] }))).toBe(true);
    expect(time.now).toBe(0);
    expect(wal.metrics.syncs).toBe(20);
    await wal.close();
  });
});
