/**
 * Issue 32, item 3: a member whose build cannot read the data on disk, or cannot run at the cluster version
 * recorded there, refuses to start with a message that says what to do, and leaves every file of its data
 * directory as it was (it judges member/version before it opens anything).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientOf, exitWithin, killAll, startServer, type ServerProcess } from './harness.js';

afterAll(async () => {
  await killAll();
}, 30_000);

/** Every file under `dir` with its size, mode, mtime and SHA-256. */
function treeDigest(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const st = statSync(p);
        out[p.slice(dir.length)] = `${st.size} ${st.mode.toString(8)} ${st.mtimeMs} ${createHash('sha256').update(readFileSync(p)).digest('hex')}`;
      }
    }
  };
  walk(dir);
  return out;
}

const refusals: Array<{ what: string; record: object; says: RegExp[] }> = [
  { what: 'data of a newer format', record: { dataFormat: 3, clusterVersion: '0.3', writtenBy: '0.3.0' }, says: [/holds data format 3 \(written by etcetera 0\.3\.0\), newer than this build reads \(etcetera 0\.2\.0\S* reads formats 1 to 2\)/, /start the newer build again/, /etcetera snapshot restore/] },
  { what: 'data of a format too old', record: { dataFormat: 0 }, says: [/holds data format 0, older than this build reads/, /upgrade through a build that reads both first/] },
  { what: 'a cluster version above this build', record: { dataFormat: 2, clusterVersion: '0.3', writtenBy: '0.3.0' }, says: [/cluster runs at version 0\.3 \(recorded in \S+member\/version\), newer than this build/, /start etcetera 0\.3 or newer/] },
  { what: 'a cluster version below what this build runs beside', record: { dataFormat: 1, clusterVersion: '0.0' }, says: [/older than this build \(etcetera 0\.2\.0\S*\) runs beside \(0\.1 and newer\)/, /intermediate build/] },
];

describe('a start refused for its version', () => {
  // One member's data directory, stopped cleanly; each case writes its record over the real one.
  let m: ServerProcess;
  beforeAll(async () => {
    m = await startServer({ name: 'v', args: ['--cluster-init', '--token', 'e2e-version-refusal'] });
    await clientOf(m).put('k').value('v');
    expect(await m.kill('SIGTERM')).toBe(0);
  }, 30_000);

  it('finds the record of a new data directory: this build\'s format', () => {
    expect(JSON.parse(readFileSync(join(m.dataDir, 'member', 'version'), 'utf8'))).toMatchObject({ dataFormat: 2, writtenBy: expect.stringMatching(/^0\.2\.0/) });
  });

  it.each(refusals)('is refused on $what, with the way out, every file untouched', async ({ record, says }) => {
    writeFileSync(join(m.dataDir, 'member', 'version'), `${JSON.stringify(record)}\n`);
    const before = treeDigest(m.dataDir);
    const refused = await startServer({ name: 'v', dataDir: m.dataDir, clientPort: m.clientPort, peerPort: m.peerPort, args: ['--token', 'e2e-version-refusal'], waitReady: false });
    const code = await exitWithin(refused, 15_000);
    expect(code).not.toBe(0);
    expect(code).not.toBe('still running');
    const log = refused.output.join('\n');
    for (const re of says) expect(log).toMatch(re);
    expect(treeDigest(m.dataDir)).toEqual(before);
  }, 30_000);
});
