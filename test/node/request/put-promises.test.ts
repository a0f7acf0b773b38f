/**
 * Promises per put (issue 34): a promise is an allocation and a microtask turn, and the put path made about
 * eleven of its own per put (async wrappers around async wrappers, a timer per deadline). Counted with
 * async_hooks on a real single member in this process (startEtcetera), 16 callers of EtcdApi.put:
 *   - the request path (src/node/request, src/node/etcd-server.ts) makes at most putPathPromisesMax per put:
 *     the proposer's wait, nothing else while a leader is known, the quota has room and auth is off;
 *   - the whole process (the caller's own await, the driver's and the WAL's per batch) at most
 *     processPromisesPerPutMax: it was 15 per put before issue 34, ~3 after.
 */
import { createHook } from 'node:async_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcetera, type Etcetera, type PutRequest } from '../../../src/index.js';
import type { RequestContext } from '../../../src/node/api-types.js';
import { freePort, removeDir, tempDir } from '../../e2e/harness.js';

const putPathPromisesMax = 1;
/** The request path's other work while the puts run (a periodic check, a stray read) adds a few in all. */
const putPathSlack = 0.05;
const processPromisesPerPutMax = 8;
const callers = 16;
const puts = 2000;

const ctx: RequestContext = { requireLeader: false, signal: new AbortController().signal, source: 'local' };
const value = Buffer.alloc(256, 0x61);
const putOf = (i: number): PutRequest => ({ key: Buffer.from(`p/${i % 100}`), value, lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false });

async function closedLoop(member: Etcetera, n: number): Promise<void> {
  let next = 0;
  const caller = async (): Promise<void> => {
    while (next < n) await member.api.put(putOf(next++), ctx);
  };
  await Promise.all(Array.from({ length: callers }, caller));
}

/** Every promise created while `fn` runs, and how many of them a frame in the request path created. */
async function countPromises(fn: () => Promise<void>): Promise<{ all: number; requestPath: number }> {
  let all = 0;
  let requestPath = 0;
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 12;
  const hook = createHook({
    init(_id, type) {
      if (type !== 'PROMISE') return;
      all++;
      const stack = new Error().stack ?? '';
      if (/src[\\/]node[\\/](request[\\/]|etcd-server\.)/.test(stack)) requestPath++;
    },
  });
  hook.enable();
  try {
    await fn();
  } finally {
    hook.disable();
    Error.stackTraceLimit = limit;
  }
  return { all, requestPath };
}

describe('promises per put', () => {
  let member: Etcetera;
  let dir: string;

  beforeAll(async () => {
    dir = tempDir('put-promises');
    const [c, p] = [await freePort(), await freePort()];
    member = await startEtcetera({
      name: 'put-promises',
      dataDir: dir,
      listenClientUrls: [`http://127.0.0.1:${c}`],
      listenPeerUrls: [`http://127.0.0.1:${p}`],
      storageProfile: 'ssd',
      unsafeNoFsync: true,
    });
    await closedLoop(member, 500); // a leader, warm code paths
  }, 30_000);

  afterAll(async () => {
    await member.close();
    removeDir(dir);
  });

  it(`the request path makes at most ${putPathPromisesMax} per put, the process at most ${processPromisesPerPutMax}`, async () => {
    const counted = await countPromises(() => closedLoop(member, puts));
    const perPut = { all: counted.all / puts, requestPath: counted.requestPath / puts };
    expect(perPut.requestPath, JSON.stringify(perPut)).toBeLessThanOrEqual(putPathPromisesMax + putPathSlack);
    expect(perPut.all, JSON.stringify(perPut)).toBeLessThanOrEqual(processPromisesPerPutMax);
  }, 60_000);
});
