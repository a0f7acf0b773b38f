/**
 * A member's files are private, as etcd's (directories 0700, files 0600): member/db, member/snap and LevelDB's
 * tables came out 0755/0644 (issue 20, item 8), readable by every local user, with every key and the join
 * token in them. The server sets umask 077 before it creates anything, so whatever mode a library asks for
 * (LevelDB, mkdir without a mode, --wal-dir) no group or other bit survives. A data or WAL directory that
 * already exists with such bits is left as it is and warned about, as etcd does.
 */
import { stat } from 'node:fs/promises';
import type { Logger } from '../config/log.js';

export const privateUmask = 0o077;
const privateDirMode = 0o700;

/** Called once, by the `server` command, before the first file is created. */
export function makeNewFilesPrivate(): void {
  process.umask(privateUmask);
}

/** Go's FileMode text of the permission bits, e.g. 0o755 → "rwxr-xr-x". */
function modeText(mode: number): string {
  return 'rwxrwxrwx'.replace(/./g, (c, i) => ((mode >> (8 - i)) & 1 ? c : '-'));
}

/** etcd's "check file permission" warning for an existing directory that others can read or enter. */
export async function warnIfShared(dir: string, logger: Logger): Promise<void> {
  let mode: number;
  try {
    mode = (await stat(dir)).mode & 0o777;
  } catch {
    return; // created later, under the umask
  }
  if ((mode & ~privateDirMode) === 0) return;
  logger.warn('check file permission', {
    error: `directory ${JSON.stringify(dir)} exist, but the permission is "d${modeText(mode)}". The recommended permission is "-${modeText(privateDirMode)}" to prevent possible unprivileged access to the data`,
  });
}
