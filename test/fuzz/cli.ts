/**
 * The long hostile-input run: `npm run fuzz -- --seconds N [--seed S] [--batch B]`, or a replay of single
 * cases: `npm run fuzz -- --case <seed>[,<seed>...]`. Needs the built CLI (`npm run build`). Exits 1 with
 * the seeds and inputs of the failing batch.
 */
import { parseArgs } from 'node:util';
import { killAll, startServer } from '../e2e/harness.js';
import { runFuzz } from './runner.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    seed: { type: 'string' },
    case: { type: 'string' },
    batch: { type: 'string', default: '8' },
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
  const member = await startServer({ name: 'fuzz', args: ['--cluster-init'] });
  console.log(caseSeeds ? `replaying cases ${caseSeeds.join(', ')}` : `fuzz seed ${seed}, ${seconds} s (replay: npm run fuzz -- --seed ${seed} --seconds ${seconds})`);
  try {
    const report = await runFuzz(member, {
      seed,
      casesMax: Number.MAX_SAFE_INTEGER,
      deadlineMs: Date.now() + seconds * 1000,
      batch: caseSeeds ? 1 : integer(values.batch, 'batch'),
      ...(caseSeeds ? { caseSeeds } : {}),
      log: (line) => console.log(line),
    });
    console.log(`ok: ${report.cases} cases, ${JSON.stringify(report.byListener)}; the member is alive and kept every write`);
    return 0;
  } catch (err) {
    console.error((err as Error).message);
    return 1;
  } finally {
    await killAll();
  }
}

process.exitCode = await main();
