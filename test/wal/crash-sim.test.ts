/**
 * W1 + W6: crash after every file-system operation of a scripted workload on the simulated FS (which loses
 * un-synced data and directory entries), optionally tearing the last write; then recovery must boot and hold
 * every acknowledged save, and the log must accept appends again. Also a second crash during recovery.
 */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { Wal, type WalOptions } from '../../src/wal/wal.js';
import { SimFs, type TearMode } from './sim-fs.js';
import { checkRecovered, runWorkload } from './workload.js';

const dir = '/data/wal';

function options(fs: SimFs, preallocate: boolean): WalOptions {
  return { fs, profile: 'ssd', tuning: { segmentBytes: 4096, preallocate, batchBytesMax: 2048 } };
}

async function runOnce(seed: number, steps: number, preallocate: boolean, crashAfterOp?: number) {
  const fs = new SimFs(crashAfterOp === undefined ? {} : { crashAfterOp });
  let rec;
  try {
    const { wal } = await Wal.open(dir, options(fs, preallocate));
    rec = await runWorkload(wal, seed, steps);
    if (!fs.crashed) await wal.close();
  } catch (err) {
    if (!fs.crashed) throw err;
  }
  return { fs, rec: rec ?? { ops: [], saves: [] } };
}

/** After recovery the log takes new appends and a further reopen sees them. */
async function checkAppendAfterRecovery(fs: SimFs, preallocate: boolean, context: string): Promise<void> {
  const { wal, state } = await Wal.open(dir, options(fs, preallocate));
  const last = state.snapshot.index + state.entries.length;
  const term = Math.max(state.hardState.term, state.entries.at(-1)?.term ?? 0);
  const entry = { term, index: last + 1, type: 0 as const, data: Uint8Array.of(0xee, 0xff) };
  await wal.save({ entries: [entry], hardState: { ...state.hardState, term } });
  await wal.close();
  const again = await Wal.open(dir, options(fs, preallocate));
  expect(again.state.entries.at(-1), `${context}: append after recovery lost`).toEqual({ ...entry, data: expect.anything() });
  expect(Buffer.from(again.state.entries.at(-1)!.data).toString('hex')).toBe('eeff');
  await again.wal.close();
}

async function exhaustive(seed: number, steps: number, preallocate: boolean): Promise<number> {
  const full = await runOnce(seed, steps, preallocate);
  const totalOps = full.fs.ops;
  expect(full.rec.saves.every((s) => s.acked)).toBe(true);
  const tearRng = new Prng(seed ^ 0x5eed);
  const modes: TearMode[] = ['none', 'prefix', 'sectors'];
  for (let n = 1; n <= totalOps; n++) {
    const { fs, rec } = await runOnce(seed, steps, preallocate, n);
    for (const tear of modes) {
      const context = `seed ${seed} preallocate ${preallocate} crash after op ${n} (${fs.log[n - 1]}) tear ${tear}`;
      const image = fs.crashImage(tear, () => tearRng.next());
      const { wal, state } = await Wal.open(dir, options(image, preallocate)).catch((err: unknown) => {
        throw new Error(`${context}: recovery failed: ${String(err)}`);
      });
      await checkRecovered(rec, state, context);
      await wal.close();
      if (tear !== 'none' || n % 3 === 0) await checkAppendAfterRecovery(image, preallocate, context);
    }
  }
  return totalOps;
}

describe('crash at every file-system operation (simulated FS)', () => {
  for (const preallocate of [true, false]) {
    for (const seed of [1, 2, 3]) {
      it(`every acknowledged save survives, seed ${seed}, preallocate ${preallocate}`, async () => {
        const ops = await exhaustive(seed, 40, preallocate);
        expect(ops).toBeGreaterThan(60); // the workload really rotates, snapshots and releases
      });
    }
  }

  it('a second crash during recovery still loses nothing acknowledged', async () => {
    const seed = 7;
    const full = await runOnce(seed, 40, true);
    for (let n = 5; n <= full.fs.ops; n += 9) {
      const { fs, rec } = await runOnce(seed, 40, true, n);
      const image = fs.crashImage('prefix', () => 0.5);
      // Count the operations recovery performs, then crash after each of them.
      const probe = image.crashImage();
      const opened = await Wal.open(dir, options(probe, true));
      await opened.wal.close();
      for (let m = 1; m <= probe.ops; m++) {
        const second = image.crashImage();
        second.options = { crashAfterOp: m };
        await Wal.open(dir, options(second, true)).then((r) => r.wal.close(), () => undefined);
        const final = second.crashImage();
        const { wal, state } = await Wal.open(dir, options(final, true));
        await checkRecovered(rec, state, `seed ${seed} crash ${n}, then crash ${m} during recovery`);
        await wal.close();
      }
    }
  });
});
