/**
 * Issue 32, item 3: a joiner older than the cluster version is refused before any membership change. The
 * older build (the previous data format, from git history: old-build.ts) announces no version, so it is
 * 0.1.0; a cluster of this build runs at 0.2 and writes format 2, which it could not be trusted to read.
 * Before the gate it was added as a learner and ran beside the newer members, and the leader lowered the
 * cluster version for it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, exitWithin, killAll, startServer, waitFor, type ServerProcess } from './harness.js';
import { oldBuild } from './old-build.js';

const token = 'e2e-version-join-token';

afterAll(async () => {
  await killAll();
}, 30_000);

async function clusterVersion(m: ServerProcess): Promise<string | null | undefined> {
  const r = await fetch(`${m.clientUrl}/status`, { signal: AbortSignal.timeout(8000) });
  return ((await r.json()) as { clusterVersion?: string | null }).clusterVersion;
}

async function memberCount(m: ServerProcess): Promise<number> {
  return (await clientOf(m).cluster.memberList({ linearizable: true } as never)).members.length;
}

describe('the join gate', () => {
  it('refuses a joiner of an older build than the cluster version, with the cluster unchanged; this build joins', async () => {
    const oldCli = await oldBuild();
    const a = await startServer({ name: 'vj-a', args: ['--cluster-init', '--token', token] });
    await waitFor('cluster version 0.2', async () => ((await clusterVersion(a)) === '0.2' ? true : undefined), 20_000);

    const old = await startServer({ name: 'vj-old', cli: oldCli, args: ['--server', a.clientUrl, '--token', token], waitReady: false });
    // The older build retries what it takes for a transient failure (15 s), then exits with the reason.
    const code = await exitWithin(old, 60_000);
    expect(code).not.toBe('still running');
    expect(code).not.toBe(0);
    expect(old.output.join('\n')).toMatch(/this cluster runs at version 0\.2, and the joining member's build \(etcetera 0\.1\.0\) is older: it cannot join\. Join with etcetera 0\.2 or newer/);
    expect(await memberCount(a)).toBe(1);
    expect(a.output.join('\n')).not.toMatch(/member joined as learner/);
    expect(await clusterVersion(a)).toBe('0.2');

    const b = await startServer({ name: 'vj-b', args: ['--server', a.clientUrl, '--token', token] });
    await waitFor('the newer joiner in the member list', async () => ((await memberCount(a)) === 2 ? true : undefined), 20_000);
    await clientOf(a).put('k').value('v');
    await b.kill('SIGTERM');
  }, 120_000);
});
