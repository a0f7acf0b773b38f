/** One conformance suite for both FsPort adapters: the real one (node:fs) and the simulated one. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WalLockedError } from '../../src/wal/errors.js';
import { NodeFsPort, type FsPort } from '../../src/wal/fs-port.js';
import { SimFs } from './sim-fs.js';

const realRoot = mkdtempSync(join(tmpdir(), 'etcetera-fsport-'));
afterAll(() => rmSync(realRoot, { recursive: true, force: true }));

const adapters: [string, () => { fs: FsPort; dir: string }][] = [
  ['NodeFsPort', () => ({ fs: new NodeFsPort(), dir: mkdtempSync(join(realRoot, 'd-')) })],
  ['SimFs', () => ({ fs: new SimFs(), dir: '/sim/d' })],
];

const codeOf = (e: unknown): unknown => (e as { code?: unknown }).code;

for (const [name, make] of adapters) {
  describe(`FsPort conformance: ${name}`, () => {
    it('writeNow writes on the calling thread, as write does', async () => {
      const { fs, dir } = make();
      await fs.mkdirp(dir);
      const f = await fs.open(`${dir}/now`, 'create');
      expect(f.writeNow).toBeTypeOf('function');
      f.writeNow!(Uint8Array.of(5, 6, 7), 2, 4);
      expect(await f.size()).toBe(6);
      const into = new Uint8Array(8);
      expect(await f.read(into, 8, 0)).toBe(6);
      expect([...into.subarray(0, 6)]).toEqual([0, 0, 0, 0, 5, 6]);
      await f.close();
      expect(() => f.writeNow!(Uint8Array.of(1), 1, 0)).toThrow();
    });

    it('creates exclusively, writes and reads at positions, reports size, truncates', async () => {
      const { fs, dir } = make();
      await fs.mkdirp(dir);
      const f = await fs.open(`${dir}/a`, 'create');
      expect(codeOf(await fs.open(`${dir}/a`, 'create').catch((e: unknown) => e))).toBe('EEXIST');
      await f.write(Uint8Array.of(1, 2, 3, 4), 3, 0);
      await f.write(Uint8Array.of(9), 1, 10);
      expect(await f.size()).toBe(11);
      const into = new Uint8Array(20);
      expect(await f.read(into, 20, 0)).toBe(11);
      expect([...into.subarray(0, 11)]).toEqual([1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 9]);
      await f.datasync();
      await f.sync();
      await f.truncate(2);
      expect(await f.size()).toBe(2);
      await f.close();
      expect([...(await fs.readFile(`${dir}/a`))!]).toEqual([1, 2]);
    });

    it('opens existing files only, reads a missing file as undefined', async () => {
      const { fs, dir } = make();
      await fs.mkdirp(dir);
      expect(codeOf(await fs.open(`${dir}/missing`, 'existing').catch((e: unknown) => e))).toBe('ENOENT');
      expect(await fs.readFile(`${dir}/missing`)).toBeUndefined();
    });

    it('renames over an existing name, unlinks, lists, syncs the directory', async () => {
      const { fs, dir } = make();
      await fs.mkdirp(dir);
      for (const n of ['x', 'y']) {
        const f = await fs.open(`${dir}/${n}`, 'create');
        await f.write(Uint8Array.of(n.charCodeAt(0)), 1, 0);
        await f.close();
      }
      await fs.rename(`${dir}/x`, `${dir}/y`);
      expect((await fs.list(dir)).sort()).toEqual(['y']);
      expect([...(await fs.readFile(`${dir}/y`))!]).toEqual(['x'.charCodeAt(0)]);
      await fs.syncDir(dir);
      await fs.unlink(`${dir}/y`);
      expect(await fs.list(dir)).toEqual([]);
    });

    it('locks a directory exclusively until released', async () => {
      const { fs, dir } = make();
      await fs.mkdirp(dir);
      const lock = await fs.lock(dir);
      await expect(fs.lock(dir)).rejects.toBeInstanceOf(WalLockedError);
      await lock.release();
      const again = await fs.lock(dir);
      await again.release();
    });
  });
}
