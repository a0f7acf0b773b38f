/**
 * Every command of the CLI's own table answers `--help` (and `-h`) with its own usage and exit 0 (issue 32,
 * item 5): before, `migrate --help` printed the snapshot usage, `snapshot restore --help` and `snapshot ls
 * --help` failed with "unknown flag --help" and `witness --help` printed "Usage: etcetera server".
 */
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliCommands } from '../../src/main/cli-commands.js';
import { cliPath, ensureBuilt } from '../e2e/harness.js';

beforeAll(() => ensureBuilt());

function run(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cliPath, ...args], { encoding: 'utf8', timeout: 20_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('every subcommand prints its own usage', () => {
  const usages = new Map<string, string>();

  it.each(cliCommands.map((c) => ({ command: c.words.join(' '), c })))('etcetera $command --help', async ({ command, c }) => {
    const own = await c.usage();
    usages.set(command, own);
    // Its usage line names it (the first line that starts with "etcetera" after "Usage:").
    expect(own).toMatch(new RegExp(`Usage:\\s+etcetera ${command}( |\\n)`));
    for (const flag of command === 'witness' ? ['--help', '-h'] : ['--help']) {
      const r = run([...c.words, flag]);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      expect(r.stdout).toBe(own);
    }
  });

  it('no two commands share a usage, and every command the top-level usage names is in the table', () => {
    expect(new Set(usages.values()).size).toBe(cliCommands.length);
    const top = run(['--help']).stdout;
    const named = [...top.matchAll(/^ {2}etcetera ([a-z]+)(?: ([a-z]+(?:\|[a-z]+)*))?/gm)].flatMap((m) =>
      m[2] !== undefined && m[1] === 'snapshot' ? m[2].split('|').map((v) => `snapshot ${v}`) : [m[1]!],
    );
    expect(named.length).toBeGreaterThan(6);
    for (const n of named) expect(cliCommands.map((c) => c.words.join(' '))).toContain(n);
  });
});
