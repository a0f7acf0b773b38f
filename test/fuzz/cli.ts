/**
 * The long hostile-input run: `npm run fuzz -- --seconds N [--seed S] [--batch B] [--auth]` (--auth: the
 * member runs with JWT auth on, so garbage tokens reach the auth gate), or a replay of single
 * cases: `npm run fuzz -- --case <seed>[,<seed>...]`. Needs the built CLI (`npm run build`). Exits 1 with
 * the seeds and inputs of the failing batch.
 */
import { parseArgs } from 'node:util';
import { killAll, startServer } from '../e2e/harness.js';
import { FuzzFailure, runFuzz } from './runner.js';
import { fuzzRoot, startAuthTarget } from './auth-target.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    seed: { type: 'string' },
    case: { type: 'string' },
    batch: { type: 'string', default: '8' },
    auth: { type: 'boolean', default: false },
  },
});

function integer(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--${what} must be a non-negative integer, got ${text}`);
  return n;
}

async function main(): Promise<number> {
  const seed = values.seed !== undefined ? integer(values.seed, 'seed') : Math.floor(Math.random() * 2 ** 31);
  const caseSeeds = values.case?.split(',').map((s) => integer(s, 'case'));
  const seconds = integer(values.seconds, 'seconds');
  const member = values.auth ? await startAuthTarget('fuzz-auth') : await startServer({ name: 'fuzz', args: ['--cluster-init'] });
  console.log(caseSeeds ? `replaying cases ${caseSeeds.join(', ')}` : `fuzz seed ${seed}, ${seconds} s (replay: npm run fuzz -- --seed ${seed} --seconds ${seconds}${values.auth ? ' --auth' : ''})`);
  try {
    const report = await runFuzz(member, {
      seed,
      casesMax: Number.MAX_SAFE_INTEGER,
      deadlineMs: Date.now() + seconds * 1000,
      batch: caseSeeds ? 1 : integer(values.batch, 'batch'),
      ...(values.auth ? { auth: fuzzRoot } : {}),
      ...(caseSeeds ? { caseSeeds } : {}),
      log: (line) => console.log(line),
    });
    console.log(`ok: ${report.cases} cases, ${JSON.stringify(report.byListener)}; the member is alive and kept every write`);
    return 0;
  } catch (err) {
    console.error((err as Error).message);
    if (err instanceof FuzzFailure && err.cases.length > 1) await pinpoint(err.cases.map((c) => c.seed));
    return 1;
  } finally {
    await killAll();
  }
}

/** Replays each case of a failing batch alone, on a fresh member, and names those that stop it. */
async function pinpoint(seeds: number[]): Promise<void> {
  await killAll();
  const culprits: number[] = [];
  for (const seed of seeds) {
    const member = values.auth ? await startAuthTarget('fuzz-pinpoint') : await startServer({ name: 'fuzz-pinpoint', args: ['--cluster-init'] });
    try {
      await runFuzz(member, { seed: 0, casesMax: 1, deadlineMs: Infinity, caseSeeds: [seed], batch: 1, ...(values.auth ? { auth: fuzzRoot } : {}) });
    } catch {
      culprits.push(seed);
    } finally {
      await killAll();
    }
  }
  console.error(culprits.length > 0
    ? `alone, these cases stop the member: ${culprits.join(', ')} (npm run fuzz -- --case ${culprits.join(',')})`
    : 'no case of the batch stops the member alone: replay them together with --case');
}

process.exitCode = await main();
