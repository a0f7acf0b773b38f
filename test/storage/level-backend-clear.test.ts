/**
 * LevelBackend.clear gives the space back (issue 32): a snapshot's restore clears the backend before writing
 * the snapshot into it, and the snapshot receiver credits the old backend's bytes as freed by it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelBackend } from '../../src/storage/level-backend.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dirBytes(dir: string): number {
  return readdirSync(dir).reduce((n, name) => n + statSync(join(dir, name)).size, 0);
}

describe('LevelBackend.clear', () => {
  it('frees the files of what it removed, not only marks it deleted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'etcetera-clear-'));
    dirs.push(dir);
    const backend = await LevelBackend.open(dir);
    try {
      // 8 MiB of incompressible values (Snappy would shrink repeated bytes to nothing), past the memtable.
      for (let i = 0; i < 128; i++) await backend.write([{ type: 'put', bucket: 'key', key: new Uint8Array([i >> 8, i & 0xff]), value: new Uint8Array(randomBytes(64 * 1024)) }]);
      await backend.defragment();
      const full = dirBytes(dir);
      expect(full).toBeGreaterThan(8 * 1024 * 1024);
      await backend.clear();
      expect(dirBytes(dir)).toBeLessThan(1024 * 1024);
      expect(await backend.get('key', new Uint8Array([0, 1]))).toBeUndefined();
    } finally {
      await backend.close();
    }
  });
});
