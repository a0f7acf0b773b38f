/**
 * The server core's small parts, each on its own: applied-index waits, ReadIndex batching (one request
 * for every read waiting at a moment, retries, deadlines), request ids, auto-compaction and the corruption
 * check.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AppliedWait } from '../../src/node/request/applied-wait.js';
import { ReadIndexBatcher } from '../../src/node/request/read-index.js';
import { realScheduler } from '../../src/node/driver/real-scheduler.js';
import { RequestIdGenerator } from '../../src/node/driver/raft-request.js';
import { AutoCompactor } from '../../src/node/periodic/auto-compactor.js';
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
});

describe('ReadIndexBatcher', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  function setup() {
    const requests: bigint[] = [];
    const applied = new AppliedWait();
    let now = 0;
    const b = new ReadIndexBatcher({
      request: (ctx) => requests.push(Buffer.from(ctx).readBigUInt64BE(0)),
      appliedWait: applied,
      retryMs: 500,
      timeoutMs: 2000,
      timeoutError: () => new Error('timed out'),
      scheduler: { ...realScheduler, nowMs: () => now },
    });
    const answer = (ctx: bigint, index: number) => {
      const c = Buffer.alloc(8);
      c.writeBigUInt64BE(ctx);
      b.onReadStates([{ index, context: c }]);
    };
    return { b, requests, applied, answer, advance: (ms: number) => { now += ms; vi.advanceTimersByTime(ms); } };
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
    const { b, requests, answer, advance } = setup();
    const r = b.read();
    r.catch(() => {});
    await vi.advanceTimersByTimeAsync(0);
    advance(600);
    expect(requests.length).toBe(2);
    expect(requests[1]).not.toBe(requests[0]);
    answer(requests[0]!, 3); // a late answer to the old context is ignored
    advance(2000);
    await expect(r).rejects.toThrow('timed out');
  });

  it('fails reads in flight when leadership changes', async () => {
    const { b } = setup();
    const r = b.read();
    await vi.advanceTimersByTimeAsync(0);
    b.onLeaderChange(new Error('leader changed'));
    await expect(r).rejects.toThrow('leader changed');
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

describe('auto-compaction', () => {
  it('refuses a malformed periodic retention (the grammar: test/config/duration.test.ts)', () => {
    const host = { isLeader: () => true, revision: () => 1, compactRevision: () => 0, compact: async () => {}, nowMs: () => 0, logger: { info: () => {}, warn: () => {} } };
    expect(() => new AutoCompactor(host, { mode: 'periodic', retention: 'five minutes' })).toThrow(/retention/);
    expect(new AutoCompactor(host, { mode: 'periodic', retention: '1h30m' }).intervalMs).toBe(540_000);
  });

  it('periodic: compacts to the revision sampled one retention ago, only on the leader', async () => {
    let now = 0;
    let revision = 10;
    let compactRev = 0;
    let leader = true;
    const compactions: number[] = [];
    const c = new AutoCompactor(
      {
        isLeader: () => leader,
        revision: () => revision,
        compactRevision: () => compactRev,
        compact: async (r) => {
          compactions.push(r);
          compactRev = r;
        },
        nowMs: () => now,
        logger: silentLogger(),
      },
      { mode: 'periodic', retention: '10s' },
    );
    expect(c.intervalMs).toBe(1000);
    for (let t = 0; t < 25; t++) {
      await c.tick();
      now += 1000;
      revision += 5;
    }
    // At t = 10 s the sample from t = 0 (revision 10) is one retention old, and so on.
    expect(compactions[0]).toBe(10);
    expect(compactions.at(-1)).toBe(10 + 5 * (24 - 10));
    leader = false;
    const before = compactions.length;
    await c.tick();
    expect(compactions.length).toBe(before);
  });

  it('revision: keeps the last N revisions', async () => {
    const compactions: number[] = [];
    const c = new AutoCompactor(
      { isLeader: () => true, revision: () => 1500, compactRevision: () => 0, compact: async (r) => void compactions.push(r), nowMs: () => 0, logger: silentLogger() },
      { mode: 'revision', retention: '1000' },
    );
    await c.tick();
    expect(compactions).toEqual([500]);
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
