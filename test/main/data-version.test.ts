/** `member/version` (src/main/data-version.ts): read, judged before a start, kept in step with the cluster version. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DataVersionRecorder, readDataVersion, startRefusal } from '../../src/main/data-version.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function memberDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'etcetera-data-version-'));
  dirs.push(d);
  return d;
}

describe('the data version record', () => {
  it('reads a directory of a build before 0.2 (no record) as format 1, and refuses a damaged record', async () => {
    const d = memberDir();
    expect(await readDataVersion(d)).toEqual({ dataFormat: 1 });
    writeFileSync(join(d, 'version'), '{"clusterVersion":"0.2"}');
    await expect(readDataVersion(d)).rejects.toThrow(/damaged \(no data format\): restore a backup, or remove, wipe and rejoin/);
  });

  it('lets this build start on formats 1 and 2 at cluster versions 0.1 and 0.2 only', () => {
    for (const r of [{ dataFormat: 1 }, { dataFormat: 2, clusterVersion: '0.2' }, { dataFormat: 1, clusterVersion: '0.1' }]) {
      expect(startRefusal('/d/member', r, '0.2.0')).toBeUndefined();
    }
    expect(startRefusal('/d/member', { dataFormat: 3 }, '0.2.0')).toMatch(/^\/d\/member holds data format 3, newer than this build reads/);
    expect(startRefusal('/d/member', { dataFormat: 2, clusterVersion: '0.3' }, '0.2.0')).toMatch(/runs at version 0\.3 \(recorded in \/d\/member\/version\), newer than this build/);
  });

  it('follows the applied cluster version: format 1 at 0.1, 2 at 0.2, one write per change, in order', async () => {
    const d = memberDir();
    const fatal: unknown[] = [];
    const r = new DataVersionRecorder(d, '0.2.0', { dataFormat: 1 }, (e) => fatal.push(e));
    r.applied('0.1');
    r.applied('0.1');
    await r.settled();
    expect(JSON.parse(readFileSync(join(d, 'version'), 'utf8'))).toEqual({ dataFormat: 1, clusterVersion: '0.1', writtenBy: '0.2.0' });
    r.applied('0.2');
    await r.settled();
    expect(JSON.parse(readFileSync(join(d, 'version'), 'utf8'))).toEqual({ dataFormat: 2, clusterVersion: '0.2', writtenBy: '0.2.0' });
    expect(fatal).toEqual([]);
  });

  it('stops the member on a cluster version above its build, and records nothing', async () => {
    const d = memberDir();
    const fatal: unknown[] = [];
    const r = new DataVersionRecorder(d, '0.2.0', { dataFormat: 2 }, (e) => fatal.push(e));
    r.applied('0.3');
    await r.settled();
    expect(String(fatal[0])).toMatch(/the cluster version became 0\.3, newer than this member's build \(etcetera 0\.2\.0\): start etcetera 0\.3 or newer/);
    expect(await readDataVersion(d)).toEqual({ dataFormat: 1 });
  });
});
