/**
 * A joining member whose disk has no room to restore the leader's snapshot (issue 32, on a real 64 MiB
 * tmpfs; needs root to mount, skipped otherwise): its data directory is on the tmpfs with a filler leaving
 * ~30 MiB free, its log elsewhere (--wal-dir); the leader holds ~12 MiB of incompressible values, so by the
 * receiver's estimate (its file S and LevelDB's restore 2·S: 36 MiB) the restore does not fit above the
 * reserve. The member refuses the snapshot chunk by chunk (DiskRoom.receiveSnapshot) instead of risking
 * ENOSPC: it stays alive and behind, NOSPACE rises; once the filler is removed the leader's next send lands,
 * it catches up and is promoted. The estimate errs high: without the admission this same restore fit in the
 * 30 MiB (on an AMD EPYC tmpfs LevelDB's own peak was 1.0·S from empty, scripts/measure-restore-peak.ts).
 */
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, closeClients, etcdctl, killAll, startServer, tempDir, waitFor, waitForVoters, type ServerProcess } from './harness.js';
import { mountTmpfs } from './tmpfs.js';

const MiB = 1024 * 1024;
const fs64 = mountTmpfs('snap-no-room');
const walDirs: string[] = [];

afterAll(async () => {
  closeClients();
  await killAll();
  fs64.remove();
  for (const d of walDirs) rmSync(d, { recursive: true, force: true });
}, 30_000);

/** `etcdctl alarm list` against `sp`. */
async function alarms(sp: ServerProcess): Promise<string> {
  const r = await etcdctl(sp.clientUrl, ['alarm', 'list'], 30_000);
  if (r.code !== 0) throw new Error(`etcdctl alarm list: ${r.stderr}`);
  return r.stdout;
}

/** On failure, the member's last lines. */
async function withOutput(sp: ServerProcess, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (error) {
    throw new Error(`${String(error)}\n--- ${sp.name}:\n${sp.output.slice(-30).join('\n')}`, { cause: error });
  }
}

describe.skipIf(!fs64.mounted)('a snapshot the disk has no room to restore', () => {
  it('is refused (no ENOSPC, the member stays alive and behind, NOSPACE up); with room again it lands', async () => {
    const token = 'snap-no-room';
    const a = await startServer({ name: 'ra', args: ['--cluster-init', '--token', token, '--snapshot-count', '50'] });
    const ca = clientOf(a);
    for (let i = 0; i < 192; i++) await ca.put(`big/${i}`).value(randomBytes(64 * 1024)); // 12 MiB, incompressible

    const dataDir = join(fs64.dir, 'b');
    mkdirSync(dataDir, { mode: 0o700 });
    const walDir = tempDir('snap-no-room-wal');
    walDirs.push(walDir);
    const filler = join(fs64.dir, 'filler');
    const leave = 30 * MiB;
    const r = spawnSync('fallocate', ['-l', String(Math.floor((fs64.freeBytes() - leave) / 4096) * 4096), filler]);
    expect(r.status, String(r.stderr)).toBe(0);
    const b = await startServer({ name: 'rb', dataDir, waitReady: false, args: ['--server', a.peerUrl, '--token', token, '--snapshot-count', '50', '--wal-dir', walDir] });
    await withOutput(b, async () => {
      await waitFor('the snapshot refused', async () => (b.output.some((l) => /NOSPACE: no room to restore snapshot/.test(l)) ? true : undefined), 30_000);
      await waitFor('NOSPACE raised', async () => (/alarm:NOSPACE/.test(await alarms(a)) ? true : undefined), 15_000);
      await waitFor('writes refused', async () => ca.put('probe').value('x').exec().then(() => undefined, (e: unknown) => (/database space exceeded/.test(String(e)) ? true : undefined)), 15_000);
      expect(b.proc.exitCode).toBeNull();
      expect(b.output.join('\n')).not.toMatch(/ENOSPC|no space left/i);
      expect(b.output.join('\n')).not.toContain('restoring from snapshot');
      // No partial receive left behind (each refused try removes its temp file).
      const snapDir = join(dataDir, 'member', 'snap');
      expect(readdirSync(snapDir).filter((n) => n.endsWith('.tmp')).length).toBeLessThanOrEqual(1);
      expect(fs64.freeBytes()).toBeGreaterThan(10 * MiB);

      rmSync(filler);
      await waitFor('restored once there is room', async () => (b.output.some((l) => l.includes('restoring from snapshot')) ? true : undefined), 60_000);
      await waitForVoters(ca, 2, { what: 'b promoted', timeoutMs: 60_000 });
      await waitFor('NOSPACE cleared', async () => ((await alarms(a)).trim() === '' ? true : undefined), 30_000);
      const cb = clientOf(b);
      expect(await cb.getAll().prefix('big/').count()).toBe(192);
      expect(b.proc.exitCode).toBeNull();
    });
  }, 180_000);
});
