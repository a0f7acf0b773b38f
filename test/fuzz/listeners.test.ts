/**
 * The bounded hostile-input run of `npm test` (issue 20): a few seconds of seeded cases against every
 * listener of one real member (client port gRPC and HTTP/1.1, gateway JSON, the Join service, the peer port).
 * FUZZ_SEED replays another run; `npm run fuzz -- --seconds N` is the long run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startServer, type ServerProcess } from '../e2e/harness.js';
import { listeners } from './cases.js';
import { runFuzz } from './runner.js';

const seed = Number(process.env.FUZZ_SEED ?? 20);

describe('hostile input on every listener', () => {
  let member: ServerProcess;
  beforeAll(async () => {
    member = await startServer({ name: 'fuzz', args: ['--cluster-init'] });
  });
  afterAll(killAll);

  it(`leaves the member alive and serving, every write kept (seed ${seed})`, async () => {
    const report = await runFuzz(member, { seed, casesMax: 400, deadlineMs: Date.now() + 4000 });
    // The run must have reached every listener, or it proves nothing about the ones it missed.
    for (const l of listeners) expect(report.byListener[l] ?? 0, l).toBeGreaterThan(0);
  });
});
