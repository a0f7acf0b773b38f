/**
 * The server core's small parts, each on its own: applied-index waits, ReadIndex batching (one request
 * for every read waiting at a moment, retries, deadlines), request ids, auto-compaction (on the simulator's
 * clock) and the corruption
 * check.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppliedWait } from '../../src/node/request/applied-wait.js';
import { ReadIndexBatcher } from '../../src/node/request/read-index.js';
import { realScheduler } from '../../src/node/driver/real-scheduler.js';
import { RequestIdGenerator } from '../../src/node/driver/raft-request.js';
import { AutoCompactor, type AutoCompaction } from '../../src/node/periodic/auto-compactor.js';
import { SimLoop, SimOwner } from '../sim/node/sim-loop.js';
import { checkCorruption, type HashAt } from '../../src/node/corruption/corruption-check.js';
import { silentLogger } from '../../src/config/log.js';
import type { Member } from '../../src/node/server-api.js';

describe('AppliedWait', () => {
  it('wakes waiters in index order once the applied index reaches them', async () => {
    const w = new AppliedWait();
    const woke: number[] = [];
    for (const i of [5, 2, 9, 2]) void w.wait(i).then(() => woke.push(i));
    w.advance(4);
    await Promise.resolve();
    await Promise.resolve();
    expect(woke).toEqual([2, 2]);
    w.advance(9);
    await new Promise((r) => setImmediate(r));
    expect(woke).toEqual([2, 2, 5, 9]);
    await expect(w.wait(3)).resolves.toBeUndefined();
  });

  it('fails every waiter when the member stops, and every later wait for an index not applied', async () => {
    const w = new AppliedWait();
    w.advance(4);
    const waiting = [w.wait(5), w.wait(9)];
    w.failAll(new Error('etcdserver: server stopped'));
    for (const p of waiting) await expect(p).rejects.toThrow('server stopped');
    await expect(w.wait(6)).rejects.toThrow('server stopped');
    await expect(w.wait(4)).resolves.toBeUndefined();
    expect(w.waiting).toBe(0);
  });
});

describe('ReadIndexBatcher', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  function setup() {
    const requests: bigint[] = [];
    const applied = new AppliedWait();
    let now = 0;
    const counted = { slow: 0, failed: 0 };
    const b = new ReadIndexBatcher({
      request: (ctx) => requests.push(Buffer.from(ctx).readBigUInt64BE(0)),
      appliedWait: applied,
      retryMs: 500,
      timeoutMs: 2000,
      timeoutError: () => new Error('timed out'),
      scheduler: { ...realScheduler, nowMs: () => now },
      onSlow: () => counted.slow++,
      onFailed: () => counted.failed++,
    });
    const answer = (ctx: bigint, index: number) => {
      const c = Buffer.alloc(8);
      c.writeBigUInt64BE(ctx);
      b.onReadStates([{ index, context: c }]);
    };
    return { b, requests, applied, answer, counted, advance: (ms: number) => { now += ms; vi.advanceTimersByTime(ms); } };
  }

  it('shares one ReadIndex request among the reads of one event-loop turn, and asks anew for later ones', async () => {
    const { b, requests, applied, answer } = setup();
    const reads = [b.read(), b.read(), b.read()];
    await vi.advanceTimersByTimeAsync(0);
    expect(requests).toHaveLength(1);
    const late = b.read();
    await vi.advanceTimersByTimeAsync(0);
    expect(requests).toHaveLength(1); // one request in flight at a time
    answer(requests[0]!, 7);
    applied.advance(7);
    await Promise.all(reads);
    expect(requests).toHaveLength(2); // the late read needs a read index obtained after it arrived
    answer(requests[1]!, 8);
    applied.advance(8);
    await late;
  });

  it('waits for the applied index to reach the read index', async () => {
    const { b, requests, applied, answer } = setup();
    let done = false;
    void b.read().then(() => (done = true));
    await vi.advanceTimersByTimeAsync(0);
    answer(requests[0]!, 10);
    applied.advance(9);
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(false);
    applied.advance(10);
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
  });

  it('asks again with a fresh context when Raft drops a request, and fails reads past their deadline', async () => {
    const { b, requests, answer, advance, counted } = setup();
    const r = b.read();
    r.catch(() => {});
    await vi.advanceTimersByTimeAsync(0);
    advance(600);
    expect(requests.length).toBe(2);
    expect(requests[1]).not.toBe(requests[0]);
    expect(counted).toEqual({ slow: 1, failed: 0 }); // etcd_server_slow_read_indexes_total: unanswered in time
    answer(requests[0]!, 3); // a late answer to the old context is ignored
    expect(counted).toEqual({ slow: 2, failed: 0 }); // ... and counted as slow, as etcd counts an out-of-date one
    advance(2000);
    await expect(r).rejects.toThrow('timed out');
    expect(counted).toEqual({ slow: 3, failed: 0 }); // the retried request, unanswered by the read's deadline
  });

  it('fails a read stuck behind a stalled apply at its deadline with the timeout error', async () => {
    const { b, requests, applied, answer, advance } = setup();
    applied.advance(9);
    const r = b.read();
    r.catch(() => {});
    await vi.advanceTimersByTimeAsync(0);
    answer(requests[0]!, 10); // the read index is known; apply never reaches it
    for (let ms = 0; ms < 1500; ms += 500) advance(500);
    await vi.advanceTimersByTimeAsync(0);
    let settled = false;
    void r.then(() => (settled = true), () => (settled = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(false);
    advance(500);
    await expect(r).rejects.toThrow('timed out');
    expect(requests).toHaveLength(1); // the read index was answered: nothing asked again
  });

  it('fails reads waiting for apply when the member stops (etcd: ErrStopped), sharing one wait per read index', async () => {
    const { b, requests, applied, answer } = setup();
    const reads = [b.read(), b.read()];
    for (const r of reads) r.catch(() => {});
    await vi.advanceTimersByTimeAsync(0);
    answer(requests[0]!, 10);
    const late = b.read();
    late.catch(() => {});
    await vi.advanceTimersByTimeAsync(0);
    answer(requests[1]!, 10);
    expect(applied.waiting).toBe(1);
    b.failAll(new Error('etcdserver: server stopped'));
    for (const r of [...reads, late]) await expect(r).rejects.toThrow('server stopped');
    applied.advance(10); // a late apply settles nothing twice
    await vi.advanceTimersByTimeAsync(0);
  });

  it('fails reads in flight when leadership changes', async () => {
    const { b, counted } = setup();
    const r = b.read();
    await vi.advanceTimersByTimeAsync(0);
    b.onLeaderChange(new Error('leader changed'));
    await expect(r).rejects.toThrow('leader changed');
    expect(counted).toEqual({ slow: 0, failed: 1 }); // etcd_server_read_indexes_failed_total
  });
});

describe('RequestIdGenerator', () => {
  it('never repeats an id across members booted in the same millisecond, nor across a restart', () => {
    const seen = new Set<bigint>();
    // A restart one second later, after 50,000 requests (the counter carries into the time at 256 per ms).
    for (const [member, boot] of [[1n, 1_000], [2n, 1_000], [1n, 2_000], [0x10001n, 5_000]] as const) {
      const g = new RequestIdGenerator(member, boot);
      for (let i = 0; i < 50_000; i++) seen.add(g.next());
    }
    expect(seen.size).toBe(200_000);
  });

  it('keeps ids below 2^63 for any member id and boot time', () => {
    const g = new RequestIdGenerator(0xffff_ffff_ffff_ffffn, 2 ** 45);
    expect(g.next() < 1n << 63n).toBe(true);
  });
});

describe('auto-compaction (etcd v3compactor, on the simulator clock)', () => {
  /** A store whose revision grows `perSecond` a second on the simulated clock, and a compactor over it. */
  function compactorOn(retention: AutoCompaction, o: { perSecond?: number; compactMs?: number } = {}) {
    const loop = new SimLoop();
    const scheduler = loop.scheduler(new SimOwner());
    const state = { leader: true, compactRev: 0 };
    const revision = (): number => 1 + Math.floor(scheduler.nowMs() / 1000) * (o.perSecond ?? 5);
    const compactions: Array<{ atS: number; revision: number }> = [];
    const c = new AutoCompactor(
      {
        isLeader: () => state.leader,
        revision,
        compactRevision: () => state.compactRev,
        compact: async (r) => {
          compactions.push({ atS: scheduler.nowMs() / 1000, revision: r });
          if (o.compactMs !== undefined) await new Promise<void>((resolve) => scheduler.after(o.compactMs!, resolve));
          state.compactRev = r;
        },
        scheduler,
        logger: silentLogger(),
      },
      retention,
    );
    return { c, loop, state, compactions, revisionAt: (s: number) => 1 + s * (o.perSecond ?? 5) };
  }

  it('refuses a malformed periodic retention (the grammar: test/config/duration.test.ts)', () => {
    const host = { isLeader: () => true, revision: () => 1, compactRevision: () => 0, compact: async () => {}, scheduler: realScheduler, logger: silentLogger() };
    expect(() => new AutoCompactor(host, { mode: 'periodic', retention: 'five minutes' })).toThrow(/retention/);
  });

  it.each([
    // retention, sample interval and window as etcd's getRetryInterval and getRetentions compute them
    ['10s', 1000, 11],
    ['1h', 360_000, 11],
    ['1h30m', 360_000, 16],
    ['24h', 360_000, 241],
  ])('periodic %s: samples every %d ms into a window of %d', (retention, intervalMs, windowMax) => {
    const { c } = compactorOn({ mode: 'periodic', retention });
    expect(c.intervalMs).toBe(intervalMs);
    expect(c.windowSamplesMax).toBe(windowMax);
  });

  it('periodic: compacts one retention after start to the revision then, then every retention to the window\'s oldest', async () => {
    const { c, loop, compactions, revisionAt } = compactorOn({ mode: 'periodic', retention: '10s' });
    c.start();
    await loop.runUntil(35_000);
    // etcd's worked example (periodic.go): the first at t = 10 s to the sample of t = 0, then every 10 s to
    // the sample of one retention (plus one interval) before.
    expect(compactions).toEqual([
      { atS: 10, revision: revisionAt(0) },
      { atS: 20, revision: revisionAt(9) },
      { atS: 30, revision: revisionAt(19) },
    ]);
    expect(c.samples).toBe(11);
    c.stop();
  });

  it('periodic on a follower: proposes nothing and keeps a bounded window, and compacts once it leads', async () => {
    const { c, loop, state, compactions, revisionAt } = compactorOn({ mode: 'periodic', retention: '10s' });
    state.leader = false;
    c.start();
    for (let s = 60; s <= 3600; s += 60) {
      await loop.runUntil(s * 1000);
      expect(c.samples).toBeLessThanOrEqual(c.windowSamplesMax);
    }
    expect(compactions).toEqual([]);
    state.leader = true;
    await loop.runUntil(3601_000);
    // The window slid while it followed: the new leader compacts to the revision of one retention ago.
    expect(compactions).toEqual([{ atS: 3601, revision: revisionAt(3590) }]);
    c.stop();
  });

  it('revision: every 5 minutes to current − retention, on the leader only, keeping no samples', async () => {
    const { c, loop, state, compactions, revisionAt } = compactorOn({ mode: 'revision', retention: '1000' });
    c.start();
    await loop.runUntil(10 * 60_000);
    expect(compactions).toEqual([
      { atS: 300, revision: revisionAt(300) - 1000 },
      { atS: 600, revision: revisionAt(600) - 1000 },
    ]);
    state.leader = false;
    await loop.runUntil(3 * 3600_000);
    expect(compactions).toHaveLength(2);
    expect(c.samples).toBe(0);
    c.stop();
  });

  it('revision: proposes nothing while the revision has not moved, nor before it passes the retention', async () => {
    const idle = compactorOn({ mode: 'revision', retention: '1000' }, { perSecond: 0 });
    idle.c.start();
    await idle.loop.runUntil(3600_000);
    expect(idle.compactions).toEqual([]);
  });

  it('does not propose again while a slow compaction is still under way', async () => {
    const { c, loop, compactions } = compactorOn({ mode: 'periodic', retention: '10s' }, { compactMs: 25_000 });
    c.start();
    await loop.runUntil(34_000);
    // The compaction started at t = 10 s ends at t = 35 s: nothing proposed meanwhile.
    expect(compactions.map((x) => x.atS)).toEqual([10]);
    await loop.runUntil(60_000);
    expect(compactions.map((x) => x.atS)).toEqual([10, 45]);
    c.stop();
  });
});

describe('corruption check', () => {
  const member = (id: bigint, isLearner = false): Member => ({ id, name: `m${id}`, peerUrls: [`http://127.0.0.1:${id}`], clientUrls: [], isLearner });

  it('raises CORRUPT only for a voter whose hash differs at the same compact revision', async () => {
    const hashes = new Map<bigint, HashAt | undefined>([
      [2n, { hash: 111, compactRevision: 5, revision: 50 }],
      [3n, { hash: 999, compactRevision: 5, revision: 50 }], // diverged
      [4n, { hash: 999, compactRevision: 7, revision: 50 }], // compacted differently: cannot compare
      [5n, undefined], // behind or unreachable
    ]);
    const raised: bigint[] = [];
    const corrupt = await checkCorruption({
      isLeader: () => true,
      memberId: 1n,
      members: () => [member(1n), member(2n), member(3n), member(4n), member(5n), member(6n, true)],
      localHash: async () => ({ hash: 111, compactRevision: 5, revision: 50 }),
      currentRevision: () => 50,
      peerHash: async (m) => hashes.get(m.id),
      raiseCorrupt: async (id) => void raised.push(id),
      logger: silentLogger(),
    });
    expect(corrupt).toEqual([3n]);
    expect(raised).toEqual([3n]);
  });
});
