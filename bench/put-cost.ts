/**
 * The cost of one put below the gRPC server (issue 34): a single member started in this process
 * (startEtcetera, real Raft driver, WAL and LevelDB), its EtcdApi.put called directly by 1 and 16 closed-loop
 * callers. Two figures per run:
 *   - process CPU per put (user + system, every thread: the WAL's and LevelDB's too), async_hooks off;
 *   - promises created per put (async_hooks PROMISE inits over the same kind of run, hook on: the hook itself
 *     costs CPU, so the two figures come from separate windows).
 * What it expects: the put path in src/node creates about one promise of its own per put; the rest is the
 * driver's and the backend's, shared by a batch, so it shrinks as callers grow.
 *
 *   npx tsx bench/put-cost.ts [--puts 20000] [--clients 1,16] [--fsync]
 */
import { createHook } from 'node:async_hooks';
import { startEtcetera } from '../src/index.js';
import type { PutRequest } from '../src/index.js';
import type { RequestContext } from '../src/node/api-types.js';
import { freePort, removeDir, tempDir } from '../test/e2e/harness.js';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const puts = Number(arg('puts', '20000'));
const clientCounts = arg('clients', '1,16').split(',').map(Number);
const fsync = process.argv.includes('--fsync');

const value = Buffer.alloc(256, 0x61);
const keys = Array.from({ length: 1000 }, (_, i) => Buffer.from(`bench/${String(i).padStart(6, '0')}`));
const putOf = (seq: number): PutRequest => ({ key: keys[seq % keys.length]!, value, lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false });
const ctx: RequestContext = { requireLeader: false, signal: new AbortController().signal, source: 'local' };

let promises = 0;
const hook = createHook({ init: (_id, type) => void (type === 'PROMISE' && promises++) });

async function run(put: (req: PutRequest) => Promise<unknown>, clients: number, n: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) await put(putOf(next++));
  };
  await Promise.all(Array.from({ length: clients }, worker));
}

const dir = tempDir('put-cost');
const [c, p] = [await freePort(), await freePort()];
const member = await startEtcetera({
  name: 'put-cost',
  dataDir: dir,
  listenClientUrls: [`http://127.0.0.1:${c}`],
  listenPeerUrls: [`http://127.0.0.1:${p}`],
  storageProfile: 'ssd',
  unsafeNoFsync: !fsync,
});
const put = (req: PutRequest): Promise<unknown> => member.api.put(req, ctx);
try {
  await run(put, 16, 2000); // warm-up: JIT, the backend's first tables
  for (const clients of clientCounts) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await run(put, clients, puts);
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const cpuUsPerPut = (cpu.user + cpu.system) / puts;

    const counted = Math.min(puts, 5000);
    promises = 0;
    hook.enable();
    await run(put, clients, counted);
    hook.disable();
    const promisesPerPut = promises / counted;
    console.log(`${String(clients).padStart(2)} clients: ${cpuUsPerPut.toFixed(1)} µs CPU/put, ${promisesPerPut.toFixed(2)} promises/put, ` +
      `${((puts * 1000) / wallMs).toFixed(0)} puts/s`);
  }
} finally {
  await member.close();
  removeDir(dir);
}
