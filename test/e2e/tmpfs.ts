/**
 * A small real file system for the disk-full tests: a tmpfs mounted on a fresh temp dir. Mounting needs root:
 * without it the tests skip with a message, but under CI (which runs as root, .ci/run) a failed mount is a
 * failure, as a missing etcd or etcdctl is.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, statfsSync } from 'node:fs';
import { tempDir } from './harness.js';

export interface Tmpfs {
  dir: string;
  mounted: boolean;
  /** Bytes free on it. */
  freeBytes(): number;
  /** Unmounts and removes the dir. */
  remove(): void;
}

export function mountTmpfs(prefix: string, size = '64m'): Tmpfs {
  const dir = tempDir(prefix);
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  const mounted = mount.status === 0;
  if (!mounted && process.env.CI) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`mount -t tmpfs failed under CI; the ${prefix} test must run there: ${String(mount.stderr)}`);
  }
  if (!mounted) console.warn(`SKIPPED: mount -t tmpfs needs root; the ${prefix} test cannot run`);
  return {
    dir,
    mounted,
    freeBytes: () => {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    },
    remove: () => {
      if (mounted) spawnSync('umount', [dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
