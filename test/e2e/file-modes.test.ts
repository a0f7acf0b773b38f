/**
 * Issue 20, item 8: a member's files are private as etcd's (directories 0700, files 0600), LevelDB's tables
 * and --wal-dir included, and an existing data directory others can read is warned about. Issue 31, item 6:
 * so is what `snapshot restore` builds (member/db, member/wal and an outside --wal-dir came out 0755).
 */
import { chmodSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, killAll, runCli, startServer, tempDir } from './harness.js';

/** Every path under `dir` (itself included) whose mode has a group or other bit. */
function shared(dir: string): string[] {
  const out: string[] = [];
  const walk = (p: string): void => {
    const st = statSync(p);
    if ((st.mode & 0o077) !== 0) out.push(`${p} ${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) for (const e of readdirSync(p)) walk(join(p, e));
  };
  walk(dir);
  return out;
}

describe('file modes', () => {
  afterAll(killAll);

  it('creates no file or directory others can read, in the data dir or --wal-dir, served or restored', async () => {
    const dataDir = join(tempDir('modes'), 'data');
    const walDir = join(tempDir('modes-wal'), 'wal');
    const m = await startServer({ name: 'modes', dataDir, args: ['--cluster-init', '--wal-dir', walDir] });
    const c = clientOf(m);
    for (let i = 0; i < 50; i++) await c.put(`k${i}`).value('v'.repeat(1000));
    const file = join(tempDir('modes-snap'), 'snap.db');
    const saved = await runCli(['snapshot', 'save', file, '--endpoints', m.clientUrl]);
    expect(saved.code, saved.stderr).toBe(0);
    await m.kill('SIGTERM');
    expect(shared(dataDir)).toEqual([]);
    expect(shared(walDir)).toEqual([]);

    const restoredDir = join(tempDir('modes-restored'), 'data');
    const restoredWal = join(tempDir('modes-restored-wal'), 'wal');
    const restored = await runCli(['snapshot', 'restore', file, '--data-dir', restoredDir, '--wal-dir', restoredWal]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(shared(restoredDir)).toEqual([]);
    expect(shared(restoredWal)).toEqual([]);
    expect(shared(file)).toEqual([]);
  });

  it('warns about an existing data dir that others can read, as etcd does', async () => {
    const dataDir = join(tempDir('modes-open'), 'data');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    const m = await startServer({ name: 'modes-open', dataDir, args: ['--cluster-init'] });
    const warning = m.output.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg?: string; error?: string }).find((l) => l.msg === 'check file permission');
    expect(warning?.error).toBe(`directory "${dataDir}" exist, but the permission is "drwxr-xr-x". The recommended permission is "-rwx------" to prevent possible unprivileged access to the data`);
  });
});
