/**
 * Where a member's log lives: `--wal-dir` (etcd's flag), or `<data-dir>/member/wal`. A member directory is
 * built elsewhere and renamed to `<data-dir>/member` once complete (bootstrap, restore), so a `--wal-dir`
 * inside `<data-dir>/member` (etcd's own default path, passed explicitly by etcd's functional tester and by
 * deployments that name every path) must be written inside the directory being built, at the same relative
 * place, or the rename replaces it (issue 25, item 5: a new cluster lost its bootstrap entries and never
 * elected a leader). A `--wal-dir` outside it (a separate disk) cannot move with the rename and is written
 * in place.
 */
import { readdir } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';

export function memberWalDir(dataDir: string): string {
  return join(dataDir, 'member', 'wal');
}

/** The log directory of the member in `dataDir`. */
export function walDirOf(dataDir: string, walDir: string | undefined): string {
  return walDir ?? memberWalDir(dataDir);
}

/** Where the log goes while the member directory is built in `workDir` (renamed to `<data-dir>/member` after). */
export function walDirWhileBuilding(dataDir: string, walDir: string | undefined, workDir: string): string {
  const inside = insideMemberDir(dataDir, walDir ?? memberWalDir(dataDir));
  return inside === undefined ? walDir! : join(workDir, inside);
}

/** Whether a --wal-dir is inside `<data-dir>/member` (so it moves, and is replaced, with that directory). */
export function walDirInsideMember(dataDir: string, walDir: string): boolean {
  return insideMemberDir(dataDir, walDir) !== undefined;
}

/** The path of `walDir` relative to `<data-dir>/member` when it is inside it (or is it), else undefined. */
function insideMemberDir(dataDir: string, walDir: string): string | undefined {
  const rel = relative(resolve(dataDir, 'member'), resolve(walDir));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel)) ? rel : undefined;
}

async function hasSegments(dir: string): Promise<boolean> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.some((n) => n.endsWith('.wal'));
}

/**
 * Before opening the log of a member that exists (its backend at `consistentIndex`): a log in the other
 * place than the one this start names is an operator's mistake (a restore or an earlier start without
 * --wal-dir, or a restart that forgot it). Opening the empty place would start the member from an empty
 * log; say where the log is instead.
 */
export async function refuseMisplacedLog(dataDir: string, walDir: string | undefined, consistentIndex: number): Promise<void> {
  const dir = walDirOf(dataDir, walDir);
  if (await hasSegments(dir)) return;
  const fallback = memberWalDir(dataDir);
  if (walDir !== undefined && resolve(walDir) !== resolve(fallback) && (await hasSegments(fallback))) {
    throw new Error(
      `--wal-dir ${walDir} holds no log, but ${fallback} does: this member's log is there. ` +
        `Leave --wal-dir out, or stop, move the files of ${fallback} into ${walDir} and start again`,
    );
  }
  if (consistentIndex > 0) {
    throw new Error(
      `${dir} holds no log, but the backend of this member is at index ${consistentIndex}: ` +
        `if it was started with --wal-dir, start it with the same --wal-dir${walDir === undefined ? '' : ` (not ${walDir})`}`,
    );
  }
}
