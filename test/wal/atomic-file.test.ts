/**
 * atomic-file.ts, the one way files are written whole: contents and mode on a real disk, and on the simulated
 * disk a crash at every step leaves the old file or the new one, never a torn or missing one, and a crash after
 * the write returns keeps the new one (the directory fsync: without it the rename is lost).
 */
import { mkdtempSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAtomicFile, publishFile, writeFileAtomically } from '../../src/wal/atomic-file.js';
import { NodeFsPort, type FsPort } from '../../src/wal/fs-port.js';
import { SimFs } from './sim-fs.js';

const dirOf = (): string => mkdtempSync(join(realpathSync(tmpdir()), 'etcetera-atomic-'));
const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const decoded = (b: Uint8Array | undefined): string | undefined => (b === undefined ? undefined : new TextDecoder().decode(b));

/** The calls `fs` receives, in order, with the paths they name. */
function recording(fs: FsPort): { fs: FsPort; calls: string[] } {
  const calls: string[] = [];
  const spy: FsPort = {
    ...fs,
    mkdirp: (d) => fs.mkdirp(d),
    list: (d) => fs.list(d),
    readFile: (p) => fs.readFile(p),
    lock: (d) => fs.lock(d),
    async open(path, mode, fileMode) {
      calls.push(`open ${mode} ${path}`);
      const f = await fs.open(path, mode, fileMode);
      return {
        ...f,
        path: f.path,
        write: (d, n, at) => (calls.push(`write ${n}@${at}`), f.write(d, n, at)),
        read: (i, n, at) => f.read(i, n, at),
        datasync: () => f.datasync(),
        sync: () => (calls.push('sync'), f.sync()),
        truncate: (n) => f.truncate(n),
        size: () => f.size(),
        close: () => (calls.push('close'), f.close()),
      };
    },
    rename: (from, to) => (calls.push(`rename ${from} ${to}`), fs.rename(from, to)),
    unlink: (p) => (calls.push(`unlink ${p}`), fs.unlink(p)),
    syncDir: (d) => (calls.push(`syncDir ${d}`), fs.syncDir(d)),
  };
  return { fs: spy, calls };
}

describe('writeFileAtomically on the real disk', () => {
  it('writes the contents, private (0600) unless told, and leaves no temp file', async () => {
    const dir = dirOf();
    await writeFileAtomically(new NodeFsPort(), join(dir, 'token'), text('secret\n'));
    await writeFileAtomically(new NodeFsPort(), join(dir, 'cert.pem'), [text('a'), text('b')], { mode: 0o644 });
    expect(readFileSync(join(dir, 'token'), 'utf8')).toBe('secret\n');
    expect(statSync(join(dir, 'token')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'cert.pem'), 'utf8')).toBe('ab');
    expect(statSync(join(dir, 'cert.pem')).mode & 0o777).toBe(0o644);
    expect(readdirSync(dir).sort()).toEqual(['cert.pem', 'token']);
  });

  it('replaces a file, and on a failure leaves the old one and no temp file', async () => {
    const dir = dirOf();
    const path = join(dir, 'index.ckpt');
    writeFileSync(path, 'old');
    writeFileSync(`${path}.tmp`, 'a crash left this');
    async function* failing(): AsyncIterable<Uint8Array> {
      yield text('new, but ');
      throw new Error('the source broke');
    }
    await expect(writeFileAtomically(new NodeFsPort(), path, failing())).rejects.toThrow('the source broke');
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(readdirSync(dir)).toEqual(['index.ckpt']);
    await writeFileAtomically(new NodeFsPort(), path, text('new'));
    expect(readFileSync(path, 'utf8')).toBe('new');
  });

  it('syncs the file before the rename and the directory after it', async () => {
    const dir = dirOf();
    const { fs, calls } = recording(new NodeFsPort());
    await writeFileAtomically(fs, join(dir, 'identity'), text('{}'));
    expect(calls).toEqual([
      `unlink ${dir}/identity.tmp`,
      `open create ${dir}/identity.tmp`,
      'write 2@0',
      'sync',
      'close',
      `rename ${dir}/identity.tmp ${dir}/identity`,
      `syncDir ${dir}`,
    ]);
  });

  it('publishes a file another writer made, with a temp name of its choosing', async () => {
    const dir = dirOf();
    writeFileSync(join(dir, 'snap.db.part'), 'db');
    const { fs, calls } = recording(new NodeFsPort());
    await publishFile(fs, join(dir, 'snap.db.part'), join(dir, 'snap.db'));
    expect(readdirSync(dir)).toEqual(['snap.db']);
    expect(calls).toEqual([`open existing ${dir}/snap.db.part`, 'sync', 'close', `rename ${dir}/snap.db.part ${dir}/snap.db`, `syncDir ${dir}`]);
    await expect(publishFile(fs, join(dir, 'elsewhere', 'x.part'), join(dir, 'x'))).rejects.toThrow(/not beside/);
  });

  it('syncs once when the caller synced before commit (a timed fsync), and again after a later write', async () => {
    const dir = dirOf();
    const { fs, calls } = recording(new NodeFsPort());
    const path = join(dir, '1-2.snap.db');
    const once = await createAtomicFile(fs, path);
    await once.write(text('whole'));
    await once.sync();
    await once.commit();
    expect(calls.filter((c) => c === 'sync')).toHaveLength(1);
    const again = await createAtomicFile(fs, path);
    await again.sync();
    await again.write(text('more'));
    await again.commit();
    expect(calls.filter((c) => c === 'sync')).toHaveLength(3);
    expect(readFileSync(path, 'utf8')).toBe('more');
  });

  it('streams through createAtomicFile and aborts without touching the final name', async () => {
    const dir = dirOf();
    const path = join(dir, '1-2.snap.db');
    const file = await createAtomicFile(new NodeFsPort(), path, { tmpPath: `${path}.7.tmp` });
    await file.write(text('part'));
    expect(readdirSync(dir)).toEqual(['1-2.snap.db.7.tmp']);
    await file.abort();
    await file.abort(); // twice: still fine
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('writeFileAtomically on the simulated disk', () => {
  const dir = '/d';
  const path = `${dir}/memo`;

  async function withOld(options: ConstructorParameters<typeof SimFs>[0] = {}): Promise<SimFs> {
    const fs = new SimFs();
    await fs.mkdirp(dir);
    await writeFileAtomically(fs, path, text('old'));
    fs.options = options;
    return fs;
  }

  it('keeps the new file through a crash right after it returns', async () => {
    const fs = await withOld();
    await writeFileAtomically(fs, path, text('new'));
    expect(decoded(await fs.crashImage().readFile(path))).toBe('new');
  });

  it('leaves the old file or the new one, whole, whatever step a crash hits', async () => {
    const opsBefore = (await withOld()).ops;
    const seen = new Set<string | undefined>();
    for (let n = opsBefore + 1; ; n++) {
      const fs = await withOld({ crashAfterOp: n });
      const finished = await writeFileAtomically(fs, path, text('new contents')).then(() => true, () => false);
      for (const tear of ['none', 'prefix'] as const) {
        const after = decoded(await fs.crashImage(tear).readFile(path));
        expect(['old', 'new contents'], `crash after op ${n} (${tear})`).toContain(after);
        seen.add(after);
      }
      if (finished) break;
    }
    expect([...seen].sort()).toEqual(['new contents', 'old']);
  });
});
