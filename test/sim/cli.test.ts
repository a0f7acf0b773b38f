/** The CLI's contract: exact last line, exit status, and a replay command per failing seed. */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

function sim(...args: string[]): { status: number | null; lines: string[] } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/sim/cli.ts', ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, lines: r.stdout.trim().split('\n') };
}

describe('npm run sim', () => {
  it('ends with exactly "N passed, 0 failed" and exits 0', () => {
    const r = sim('--seeds', '3', '--start', '11');
    expect(r.lines.at(-1)).toBe('3 passed, 0 failed');
    expect(r.status).toBe(0);
  });

  it('lists each failing seed with the command that replays it, and exits 1', () => {
    const r = sim('--seeds', '2', '--start', '1', '--fault', 'voteBeforePersist');
    expect(r.lines.at(-1)).toBe('0 passed, 2 failed');
    expect(r.status).toBe(1);
    for (const seed of [1, 2]) {
      expect(r.lines).toContainEqual(expect.stringContaining(`replay: npm run sim -- --seeds 1 --start ${seed} --fault voteBeforePersist --verbose`));
    }
  });

  it('rejects unknown arguments', () => {
    expect(sim('--bogus').status).not.toBe(0);
  });
});
