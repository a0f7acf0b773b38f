/**
 * The data-directory lock (W16), without native dependencies: Node has no flock(2).
 *
 * Choice: a `LOCK` file created with O_CREAT|O_EXCL that holds the owner's pid and its start time (field 22 of
 * /proc/<pid>/stat). Opening a directory whose LOCK names a live process (including this very process: a
 * second open in the same process) fails with WalLockedError naming the directory and the holder. A LOCK
 * left by a killed process (SIGKILL, power loss) names a dead pid, a zombie (exited, not yet reaped by its
 * parent: state Z), or a pid now reused by another program, which the start time exposes; such a stale lock
 * is removed and the open proceeds, so a crash never blocks a restart.
 *
 * Limits (documented, accepted): (1) two processes that find the same stale lock at the same instant can both
 * remove it and both win (an flock would not have this window); (2) without /proc (not Linux) liveness falls
 * back to kill(pid, 0), so a reused pid keeps a stale lock until the file is removed by hand; (3) a process on
 * another host sharing the directory over NFS is not detected as alive.
 */
import { constants as fsConstants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { WalLockedError } from './errors.js';

/** A held directory lock (FsPort.lock). */
export interface DirLock {
  release(): Promise<void>;
}

const lockName = 'LOCK';

interface Holder {
  pid: number;
  startTime: string;
}

/** Fields 3 (state) and 22 (starttime) of /proc/<pid>/stat; undefined when there is no such process. */
async function procStat(pid: number): Promise<{ state: string; startTime: string } | undefined> {
  try {
    const stat = await fsp.readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name may contain spaces and parentheses: fields are counted after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '', startTime: fields[19] ?? '' };
  } catch {
    return undefined;
  }
}

async function startTimeOf(pid: number): Promise<string | undefined> {
  return (await procStat(pid))?.startTime;
}

async function isAlive(holder: Holder): Promise<boolean> {
  const stat = await procStat(holder.pid);
  if (stat !== undefined) {
    // A zombie (Z) or dead (X) process has exited and closed its files; only its parent has not reaped it
    // yet (a restart right after kill -9). It holds nothing, as an flock would already be released.
    if (stat.state === 'Z' || stat.state === 'X') return false;
    return holder.startTime === '' || stat.startTime === holder.startTime;
  }
  try {
    await fsp.access('/proc/self/stat');
    return false; // /proc works, so the pid has no entry: the process is gone
  } catch {
    try {
      process.kill(holder.pid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
}

function parseHolder(text: string): Holder | undefined {
  const [pidText, startTime] = text.trim().split(' ');
  const pid = Number(pidText);
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  return { pid, startTime: startTime ?? '' };
}

/** Take the lock on `dir` or reject with WalLockedError. */
export async function acquireDirLock(dir: string): Promise<DirLock> {
  const file = path.join(dir, lockName);
  const me = `${process.pid} ${(await startTimeOf(process.pid)) ?? ''}\n`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fh = await fsp.open(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600);
      try {
        await fh.writeFile(me);
      } finally {
        await fh.close();
      }
      return { release: () => releaseLock(file, me) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const text = await fsp.readFile(file, 'utf8').catch(() => undefined);
    if (text === undefined) continue; // removed between our open and read: try again
    const holder = parseHolder(text);
    // An empty or half-written LOCK is a holder that is still starting (or one that died while writing it;
    // the latter needs manual removal, which the message says).
    if (holder === undefined) throw new WalLockedError(dir, `a process still writing ${file} (remove it if none is)`);
    if (await isAlive(holder)) {
      const who = holder.pid === process.pid ? `this process (pid ${holder.pid})` : `pid ${holder.pid}`;
      throw new WalLockedError(dir, who);
    }
    await fsp.unlink(file).catch(() => undefined); // stale: its owner is dead
  }
  throw new WalLockedError(dir, 'processes racing for it');
}

/**
 * Who holds the lock on `dir`, read-only (a start checks this before it writes anything): undefined when no
 * live process does (no LOCK, or a stale one, which acquireDirLock will remove).
 */
export async function liveLockHolder(dir: string): Promise<string | undefined> {
  const text = await fsp.readFile(path.join(dir, lockName), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const holder = parseHolder(text);
  if (holder === undefined) return `a process still writing ${path.join(dir, lockName)} (remove it if none is)`;
  if (!(await isAlive(holder))) return undefined;
  return holder.pid === process.pid ? `this process (pid ${holder.pid})` : `pid ${holder.pid}`;
}

async function releaseLock(file: string, me: string): Promise<void> {
  // Remove the file only if it is still ours (it always should be; never delete another holder's lock).
  const text = await fsp.readFile(file, 'utf8').catch(() => undefined);
  if (text === me) await fsp.unlink(file).catch(() => undefined);
}
