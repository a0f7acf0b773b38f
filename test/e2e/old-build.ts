/**
 * An older etcetera build from this repository's git history, for upgrade and downgrade tests: the commit's
 * tree (`git archive`, so the repository's worktree list is not touched) with this checkout's node_modules,
 * cached in the OS temp dir by commit, so only the first run pays for the build. Only the command is built
 * (its build's second step, scripts/bundle-cli.mjs: esbuild from the TypeScript sources, ~3 s); tsc's
 * type check and library output are not needed to run it and took ~70 s on 2 busy vCPUs.
 *
 * It needs the commit in the local history: CI's `git clone` of main has it; a shallow clone does not, and the
 * test then fails saying so (it never skips: an upgrade test that cannot run is a defect).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './harness.js';

const execFileP = promisify(execFile);

/**
 * The last commit of data format 1 and builds that announce no version (main before issue 32's cluster version).
 */
export const previousFormatCommit = 'fdef2e79c73e2c51d58341290cf1c57a69d9a477';

/** The bundle takes seconds; far beyond that something hangs. */
const buildTimeoutMs = 120_000;

/** The path of `cli.js` of the build of `commit`, building it first unless cached. */
export async function oldBuild(commit: string = previousFormatCommit): Promise<string> {
  const dir = join(tmpdir(), `etcetera-old-build-${commit.slice(0, 12)}`);
  const cli = join(dir, 'dist/src/main/cli.js');
  if (existsSync(cli)) {
    relinkNodeModules(dir);
    return cli;
  }
  try {
    await execFileP('git', ['-C', repoRoot, 'cat-file', '-e', `${commit}^{commit}`]);
  } catch {
    throw new Error(`commit ${commit} is not in ${repoRoot}'s history (a shallow clone?): the upgrade test needs it; fetch with \`git fetch --unshallow\``);
  }
  // Built beside, then renamed into place: a build killed halfway is never taken for a cached one.
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  try {
    await execFileP('bash', ['-c', 'git -C "$0" archive --format=tar "$1" | tar -x -C "$2"', repoRoot, commit, building]);
    relinkNodeModules(building);
    mkdirSync(join(building, 'dist/src/main'), { recursive: true });
    await execFileP(process.execPath, ['scripts/bundle-cli.mjs'], { cwd: building, timeout: buildTimeoutMs, maxBuffer: 16 << 20 }).catch((error: unknown) => {
      const e = error as { stdout?: string; stderr?: string };
      throw new Error(`building ${commit} for the upgrade test failed:\n${e.stdout ?? ''}${e.stderr ?? String(error)}`);
    });
    if (!existsSync(join(building, 'dist/src/main/cli.js'))) throw new Error(`building ${commit} left no dist/src/main/cli.js`);
    try {
      renameSync(building, dir);
    } catch (error) {
      // Another test run built it meanwhile: theirs is as good.
      if (!existsSync(cli)) throw error;
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return cli;
}

/**
 * Points the build's node_modules at this checkout's. A cached build keeps the link it was made with, and
 * that checkout (a worktree since removed, a moved clone) may be gone: the old build then failed to start
 * with "Cannot find module '@node-rs/bcrypt'". The bundle keeps native and external packages out, so the link
 * must always resolve to a live node_modules.
 */
function relinkNodeModules(dir: string): void {
  const link = join(dir, 'node_modules');
  const target = join(repoRoot, 'node_modules');
  let current: string | undefined;
  try {
    current = readlinkSync(link);
  } catch {
    current = undefined;
  }
  if (current === target && existsSync(join(link, '@node-rs/bcrypt'))) return;
  rmSync(link, { recursive: true, force: true });
  symlinkSync(target, link);
}
