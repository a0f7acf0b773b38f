/**
 * Snapshots at scale, checked by etcd itself (issue 21, item 6), at the size the issue names: 200,000 keys
 * (several revisions each), values up to 1.4 MiB, a 32 KiB key, leases with keys, a compaction; our
 * snapshots restored and served by etcd 3.4, etcd's restored and served by us (test/backup/snapshot-scale.ts
 * says what is checked). CI runs a smaller shape of the same code (test/backup/snapshot-scale.test.ts); this
 * is the full-size run, too slow for CI. Exits 1 when any check fails.
 *
 * Expected (2 cores, 2026-12-03): 360,001 imported revisions, 180,004 live keys; the key bucket four levels
 * deep (a root, two branch levels, 19,360 leaves; 161 branch and 563 overflow pages), an 82 MB snapshot (etcd's
 * own after defrag: also four levels, 91 MB), every check ok, 130 s in all (each side's dump ~35 s of it).
 *
 *   npm run build && npx tsx bench/snapshot-scale.ts [--keys 200000] [--value-bytes-max 400] [--leases 100]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runScale, scaleChecks } from '../test/backup/snapshot-scale.js';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
}

const shape = { keys: option('--keys', 200_000), valueBytesMax: option('--value-bytes-max', 400), leases: option('--leases', 100) };
const dir = await mkdtemp(join(tmpdir(), 'etcetera-snapshot-scale-'));
let failed = false;
try {
  console.log(`shape ${JSON.stringify(shape)} in ${dir}`);
  const r = await runScale(shape, dir, (line) => console.log(`  ${line}`));
  console.log(`records ${r.records}, revisions ${JSON.stringify(r.marks)}, live keys ${r.expected.keyCount}`);
  console.log(`our key bucket tree:  ${JSON.stringify(r.ours.tree)}`);
  console.log(`etcd's key bucket tree (after defrag): ${JSON.stringify(r.etcds.tree)}`);
  console.log(`snapshot status, ours: ${JSON.stringify(r.ours.maintenance.etcdctl)}; etcd's: ${JSON.stringify(r.etcds.status.etcdctl)}`);
  for (const c of scaleChecks(r, shape)) {
    console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.what}${c.ok || c.detail === undefined ? '' : `: ${c.detail}`}`);
    if (!c.ok) failed = true;
  }
  console.log(`total ${Object.values(r.secondsPerStep).reduce((a, b) => a + b, 0).toFixed(1)} s`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
