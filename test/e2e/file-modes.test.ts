/**
 * Issue 20, item 8: what a member writes is private, as etcd's: directories 0700 and files 0600 (LevelDB's
 * tables and logs, the WAL's segments, snapshots, the token), an outside --wal-dir too; a data directory that
 * others can read is named in a warning at start, with etcd's wording. Before: member/db and member/snap 0755,
 * LevelDB files 0644, --wal-dir 0755, and no warning.
 */
import { chmodSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killAll, startServer, tempDir } from './harness.js';

afterAll(async () => {
  await killAll();
}, 30_000);

function walk(dir: string, out: Array<{ path: string; mode: number; isDir: boolean }> = []): typeof out {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path);
    out.push({ path, mode: st.mode & 0o777, isDir: st.isDirectory() });
    if (st.isDirectory()) walk(path, out);
  }
  return out;
}

describe('file modes (issue 20, item 8)', () => {
  it('creates every directory 0700 and every file 0600, an outside --wal-dir included', async () => {
    const dataDir = join(tempDir('modes'), 'data');
    const walDir = join(tempDir('modes-wal'), 'wal');
    const sp = await startServer({ name: 'modes', dataDir, args: ['--cluster-init', '--wal-dir', walDir] });
    await sp.kill('SIGTERM');
    const entries = [...walk(dataDir), ...walk(walDir)];
    expect(entries.some((e) => e.path.includes(join('member', 'db')) && !e.isDir)).toBe(true);
    expect(entries.some((e) => e.path.endsWith('.wal'))).toBe(true);
    const open = entries.filter((e) => (e.mode & 0o077) !== 0).map((e) => `${e.path} ${e.mode.toString(8)}`);
    expect(open).toEqual([]);
    expect(statSync(walDir).mode & 0o077).toBe(0);
  }, 60_000);

  it('warns, with etcd\'s wording, when the data directory is readable by others', async () => {
    const dataDir = join(tempDir('modes-open'), 'data');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    const sp = await startServer({ name: 'open', dataDir, args: ['--cluster-init'] });
    expect(sp.output.join('\n')).toContain(`check file permission: directory \\"${dataDir}\\" exists, but the permission is \\"drwxr-xr-x\\"`);
    await sp.kill('SIGTERM');
  }, 60_000);
});
