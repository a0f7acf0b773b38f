/**
 * Restart after kill -9 with the background key index checkpoint (issue 34): a member with ≥ 16 MiB of values
 * writes member/index.ckpt while it runs; killed with -9 under load, the restart loads the key index from it
 * (scanning only the tail after its cut) and reads back every acknowledged put.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, killAll, startServer, waitFor } from './harness.js';

afterAll(() => killAll());

describe('index checkpoint across kill -9', () => {
  it('a restart under load loads the live checkpoint and reads every acked key', async () => {
    const first = await startServer({ name: 'ckpt' });
    const c = clientOf(first);
    // 20 MiB of incompressible values: past the keeper's 16 MiB scan threshold.
    const big = randomBytes(64 * 1024);
    for (let i = 0; i < 320; i += 8) {
      await Promise.all(Array.from({ length: 8 }, (_, j) => c.put(`big/${String(i + j).padStart(4, '0')}`).value(big)));
    }
    await waitFor('a live checkpoint', async () => (first.output.some((l) => l.includes('"wrote a key index checkpoint"')) ? true : undefined), 30_000);
    expect(existsSync(join(first.dataDir, 'member', 'index.ckpt'))).toBe(true);
    // Load that keeps going until the kill: every put acknowledged before it must survive.
    const acked: string[] = [];
    let stop = false;
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const key = `tail/${w}/${i}`;
        try {
          await c.put(key).value(`v${i}`);
          acked.push(key);
        } catch {
          return;
        }
      }
    });
    await waitFor('some tail writes', async () => (acked.length >= 400 ? true : undefined), 30_000);
    await first.kill('SIGKILL');
    stop = true;
    await Promise.all(writers);
    const second = await startServer({ name: 'ckpt', dataDir: first.dataDir });
    const loaded = second.output.find((l) => l.includes('"loaded the key index"'));
    expect(loaded).toMatch(/"checkpoint":true/);
    const d = clientOf(second);
    const tail = await d.getAll().prefix('tail/').keys();
    const have = new Set(tail);
    expect(acked.filter((k) => !have.has(k))).toEqual([]);
    expect(await d.getAll().prefix('big/').count()).toBe(320);
    await second.kill('SIGKILL');
  }, 120_000);
});
