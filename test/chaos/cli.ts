/**
 * `npm run chaos -- --runs N --seed S [--fault NAME] [--election-ms MS] [--keys K] [--clients C] [--self-test] [--verbose] [--list]`: N randomized runs with seeds S, S+1, …
 * (each seed chooses its fault), ending with exactly `N passed, M failed` and, for each failure, its seed,
 * what was violated and the command that replays it.
 */
import { parseArgs } from 'node:util';
import { liveClusters } from './cluster.js';
import { faults } from './faults.js';
import { runOnce } from './run.js';
import { selfTest } from './self-test.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '1' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    fault: { type: 'string' },
    'election-ms': { type: 'string' },
    keys: { type: 'string' },
    clients: { type: 'string' },
    verbose: { type: 'boolean', default: false },
    list: { type: 'boolean', default: false },
    'self-test': { type: 'boolean', default: false },
  },
});

if (values.list) {
  for (const f of faults) console.log(`${f.name.padEnd(20)} ${f.describe}`);
  process.exit(0);
}

// Interrupted: kill the members of the run in progress before leaving.
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    void Promise.all([...liveClusters].map((c) => c.stop())).finally(() => process.exit(130));
  });
}

const runs = Number(values.runs);
const seed = Number(values.seed);
if (!Number.isSafeInteger(runs) || runs < 1 || !Number.isSafeInteger(seed)) {
  console.error('usage: npm run chaos -- --runs N --seed S [--fault NAME] [--election-ms MS] [--keys K] [--clients C] [--self-test] [--verbose] [--list]');
  process.exit(2);
}

const failures: { seed: number; fault: string; violations: string[]; replay: string; saved?: string }[] = [];
let passed = 0;
for (let i = 0; i < runs; i++) {
  const s = seed + i;
  const electionMs = values['election-ms'] === undefined ? undefined : Number(values['election-ms']);
  const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));
  const r = await runOnce({ seed: s, fault: values.fault, verbose: values.verbose, electionMs, keys: num(values.keys), clients: num(values.clients) });
  const line = `run ${i + 1}/${runs} seed ${s} ${r.fault}: ${r.ok ? 'ok' : 'FAILED'} (${(r.durationMs / 1000).toFixed(1)} s, ${r.opsPerSec} ops/s${r.report ? `, ${r.report.stats.ops} ops, ${r.report.stats.events} events` : ''})`;
  console.log(line);
  for (const n of r.notes) console.log(`  note: ${n}`);
  if (values['self-test'] && r.history) {
    for (const t of selfTest(r.history, r.finalRev)) {
      console.log(`  self-test ${t.name}: ${!t.applied ? 'nothing to corrupt' : t.caught ? `caught (${t.example})` : 'NOT CAUGHT'}`);
      if (t.applied && !t.caught) r.violations.push(`self-test: planted ${t.name} not caught`);
    }
    r.ok = r.violations.length === 0;
  }
  if (r.ok) passed++;
  else {
    failures.push({ seed: s, fault: r.fault, violations: r.violations, replay: r.replay, saved: r.saved });
    for (const v of r.violations.slice(0, 5)) console.log(`  ${v.split('\n').join('\n  ')}`);
  }
}
for (const f of failures) {
  console.log(`FAILED seed ${f.seed} (${f.fault}): ${f.violations.length} violations; replay: ${f.replay}${f.saved ? `; logs and history: ${f.saved}` : ''}`);
}
console.log(`${passed} passed, ${failures.length} failed`);
process.exit(failures.length === 0 ? 0 : 1);
