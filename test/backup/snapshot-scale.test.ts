/**
 * Snapshots at scale, checked by etcd 3.4 itself (issue 21, item 6): the round trip of snapshot-scale.ts on a
 * CI-sized shape. 6,000 keys with values of up to 2,000 bytes make ~11,000 revisions in ~3,000 leaf pages,
 * so the key bucket is exactly three levels deep (a root branch page over a level of branch pages over the
 * leaves), and the five big values (up to 1.4 MiB) and the 32 KiB key span overflow pages. The 200,000-key
 * run of the same code (four levels, 82 MB) is bench/snapshot-scale.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultPageBytes } from '../../src/bbolt/index.js';
import { killAll } from '../e2e/harness.js';
import { haveEtcd } from './etcd-ref.js';
import { bigValueBytes, runScale, scaleChecks, type ScaleShape } from './snapshot-scale.js';

const shape: ScaleShape = { keys: 6_000, valueBytesMax: 2_000, leases: 20 };
const dirs: string[] = [];
afterAll(async () => {
  await killAll();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
}, 30_000);

describe.skipIf(!haveEtcd)('snapshots at scale, restored and served by etcd 3.4 and by us', () => {
  it('our snapshots and etcd\'s: same keys, values, revisions, history, compaction, leases and HashKV on both sides', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'etcetera-snapshot-scale-'));
    dirs.push(dir);
    const r = await runScale(shape, dir);
    expect(scaleChecks(r, shape).filter((c) => !c.ok)).toEqual([]);
    // The shape this proves: branch pages at two depths, and overflow pages for every big value.
    const overflowMin = bigValueBytes.reduce((n, b) => n + Math.ceil(b / defaultPageBytes) - 1, 0);
    expect(r.ours.tree).toMatchObject({ depth: 3, inline: false });
    expect(r.ours.tree.branchPages).toBeGreaterThan(10);
    expect(r.ours.tree.overflowPages).toBeGreaterThanOrEqual(overflowMin);
    expect(r.etcds.tree.depth).toBe(3);
    expect(r.etcds.tree.overflowPages).toBeGreaterThanOrEqual(overflowMin);
  }, 120_000);
});
