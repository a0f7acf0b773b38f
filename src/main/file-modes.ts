/**
 * A data directory is private (issue 20, item 8): etcd creates its directories 0700 and its files 0600, and
 * warns when an existing data directory is readable by others. The server process sets its umask so that
 * everything it creates, LevelDB's tables included (LevelDB opens files 0644 and takes no mode), is private;
 * an embedding host keeps its own umask.
 */
import { stat } from 'node:fs/promises';

/** Owner-only: the bits the umask clears from every file and directory the server creates. */
export const privateUmask = 0o077;

/** etcd's check (fileutil.CheckDirPermission): a warning naming the directory and its mode, or undefined. */
export async function dataDirModeWarning(dir: string): Promise<string | undefined> {
  const mode = await stat(dir).then((s) => s.mode & 0o777, () => undefined);
  if (mode === undefined || (mode & 0o077) === 0) return undefined;
  return `check file permission: directory ${JSON.stringify(dir)} exists, but the permission is ${JSON.stringify(modeString(mode))}. ` +
    'The recommended permission is "-rwx------" to prevent possible unprivileged access to the data.';
}

function modeString(mode: number): string {
  const bits = 'rwxrwxrwx';
  let out = 'd';
  for (let i = 0; i < 9; i++) out += mode & (1 << (8 - i)) ? bits[i] : '-';
  return out;
}
