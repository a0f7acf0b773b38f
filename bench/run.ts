/**
 * `npm run bench`: the tinybench micro-benchmarks, one after another, each in its own process (so one
 * benchmark's heap and JIT state do not colour the next), printing their tables as they go.
 *
 *   npm run bench                 raft, wal, mvcc, watch
 *   npm run bench -- wal mvcc     only these
 *
 * The side-by-side comparison with etcd is `npm run bench:compare` (bench/compare/cli.ts).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const benches = ['raft', 'wal', 'mvcc', 'watch'];
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((w) => !benches.includes(w));
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(', ')}; known: ${benches.join(', ')}`);
  process.exit(2);
}

const failed: string[] = [];
for (const name of wanted.length > 0 ? wanted : benches) {
  const file = join(import.meta.dirname, `${name}.bench.ts`);
  console.log(`\n=== ${name} (${file})`);
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', file], { stdio: 'inherit', timeout: 15 * 60_000 });
  const seconds = ((performance.now() - t0) / 1000).toFixed(0);
  if (r.status !== 0) {
    failed.push(name);
    console.log(`=== ${name} FAILED (status ${r.status ?? r.signal}, ${seconds} s)`);
  } else {
    console.log(`=== ${name} done in ${seconds} s`);
  }
}
if (failed.length > 0) {
  console.error(`\nfailed: ${failed.join(', ')}`);
  process.exit(1);
}
