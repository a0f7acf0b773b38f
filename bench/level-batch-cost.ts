/**
 * CPU per put of the three ways to write a LevelDB batch with classic-level: its private `_batch` hook (what
 * LevelBackend called until issue 31, item 6), the public array form db.batch(ops), and the public chained
 * batch (db.batch().put(...).write()), which LevelBackend uses now. Two shapes: 1 KB values in batches of
 * 1,000 (a snapshot import) and ~130-byte values in batches of 100 (the apply loop's flushes).
 *
 * Expected: the chained batch within ~10% of the hook (both hand each key and value to the native batch once);
 * the array form ~3-4x either (it clones and checks every op and runs hooks and events). Measured (2 shared
 * cores, best of 3): import 4.4 / 12.9 / 4.5 µs per put (hook / array / chained), apply 2.4 / 9.4 / 2.0 µs.
 *
 * Run: npx tsx bench/level-batch-cost.ts
 */
import { ClassicLevel } from 'classic-level';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
type Op = { type: 'put'; key: Uint8Array; value: Uint8Array };
async function run(kind: string, batchOps: number, valueBytes: number, total: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'h31-level-'));
  const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view', writeBufferSize: 1 << 20 });
  await db.open();
  const value = new Uint8Array(valueBytes).fill(7);
  const t = process.cpuUsage();
  for (let i = 0; i < total; i += batchOps) {
    const ops: Op[] = [];
    for (let j = 0; j < batchOps; j++) { const k = new Uint8Array(12); new DataView(k.buffer).setUint32(8, i + j); ops.push({ type: 'put', key: k, value }); }
    if (kind === 'private') await (db as any)._batch(ops, { sync: false });
    else if (kind === 'public') await db.batch(ops, { sync: false });
    else { const b = db.batch(); for (const o of ops) b.put(o.key, o.value); await b.write({ sync: false }); }
  }
  const u = process.cpuUsage(t);
  await db.close(); rmSync(dir, { recursive: true, force: true });
  return (u.user + u.system) / total; // µs per op
}
for (const [batchOps, valueBytes, total] of [[1000, 1024, 100_000], [100, 130, 100_000]] as const) {
  const best: Record<string, number> = { private: Infinity, public: Infinity, chained: Infinity };
  for (let r = 0; r < 3; r++) for (const k of Object.keys(best)) best[k] = Math.min(best[k]!, await run(k, batchOps, valueBytes, total));
  console.log(`${batchOps} ops/batch, ${valueBytes} B values:`, Object.entries(best).map(([k, v]) => `${k} ${v.toFixed(2)} µs/op`).join(', '));
}
