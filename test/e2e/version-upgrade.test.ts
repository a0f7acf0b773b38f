/**
 * Issue 32, item 3: a rolling upgrade from the previous data format (main before the cluster version, built
 * from git history by old-build.ts) to this build, and a rolling downgrade back, on a three-member cluster of
 * real processes. While any member runs the older build, which announces no version, the cluster version
 * stays 0.1 and no data directory is raised to format 2; once every member runs this build the leader commits
 * 0.2 and each member records format 2; a downgrade lowers it again as soon as the leader meets the older
 * build, and the older build runs on the format-2 data. No acknowledged write is lost at any step.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, closeClients, killAll, runCli, startServer, waitFor, type ServerProcess } from './harness.js';
import { oldBuild } from './old-build.js';

const token = 'e2e-version-upgrade-token';

afterAll(async () => {
  await killAll();
}, 30_000);

interface StatusJson { member: string; leader: string; build?: string; clusterVersion?: string | null }

async function status(m: ServerProcess): Promise<StatusJson> {
  const r = await fetch(`${m.clientUrl}/status`, { signal: AbortSignal.timeout(8000) });
  return (await r.json()) as StatusJson;
}

/** member/version of a data directory, or undefined where the older build wrote none. */
function dataVersion(m: ServerProcess): { dataFormat: number; clusterVersion?: string } | undefined {
  try {
    return JSON.parse(readFileSync(join(m.dataDir, 'member', 'version'), 'utf8')) as { dataFormat: number; clusterVersion?: string };
  } catch {
    return undefined;
  }
}

describe('a rolling upgrade from the previous data format, and a rolling downgrade back', () => {
  const written: Record<string, string> = {};
  const argsOf = new Map<string, string[]>();

  /** A put through `m` that must be acknowledged (retried while the cluster settles after a restart). */
  async function put(m: ServerProcess, key: string): Promise<void> {
    await waitFor(`a put through ${m.name}`, async () => {
      await clientOf(m).put(key).value(m.name);
      return true;
    }, 20_000);
    written[key] = m.name;
  }

  async function restart(m: ServerProcess, cli: string | undefined): Promise<ServerProcess> {
    await m.kill('SIGTERM');
    closeClients();
    return startServer({ name: m.name, dataDir: m.dataDir, clientPort: m.clientPort, peerPort: m.peerPort, args: argsOf.get(m.name)!, ...(cli !== undefined ? { cli } : {}) });
  }

  async function expectAllKeys(members: ServerProcess[]): Promise<void> {
    for (const m of members) {
      const kvs = await waitFor(`every key through ${m.name}`, async () => clientOf(m).getAll().prefix('k/').strings(), 20_000);
      expect(kvs).toEqual(written);
    }
  }

  it('keeps the cluster at 0.1 while any member runs the older build, 0.2 once none does, and 0.1 again after a downgrade', async () => {
    const oldCli = await oldBuild();
    argsOf.set('a', ['--cluster-init', '--token', token]);
    let members = [await startServer({ name: 'a', cli: oldCli, args: argsOf.get('a')! })];
    for (const name of ['b', 'c']) {
      argsOf.set(name, ['--server', members[0]!.peerUrl, '--token', token]);
      members.push(await startServer({ name, cli: oldCli, args: argsOf.get(name)! }));
    }
    await waitFor('three started voters', async () => {
      const r = await clientOf(members[0]!).cluster.memberList({ linearizable: true } as never);
      return r.members.length === 3 && r.members.every((x) => !x.isLearner && x.name !== '') ? true : undefined;
    }, 40_000);
    await put(members[0]!, 'k/old');
    for (const m of members) expect(dataVersion(m)).toBeUndefined();

    // Upgrade, one member at a time.
    for (let i = 0; i < members.length; i++) {
      members[i] = await restart(members[i]!, undefined);
      await put(members[i]!, `k/upgraded-${i}`);
      if (i < members.length - 1) {
        // Mixed: whoever leads, nothing may run at 0.2 nor write format 2.
        const s = await status(members[i]!);
        expect(s.build).toMatch(/^0\.2\.0/);
        expect(s.clusterVersion === null || s.clusterVersion === '0.1').toBe(true);
        expect(dataVersion(members[i]!)?.dataFormat ?? 1).toBe(1);
      }
    }
    for (const m of members) {
      await waitFor(`${m.name} at cluster version 0.2`, async () => ((await status(m)).clusterVersion === '0.2' ? true : undefined), 20_000);
      await waitFor(`${m.name} records format 2`, async () => (dataVersion(m)?.dataFormat === 2 ? true : undefined), 5_000);
      expect(dataVersion(m)?.clusterVersion).toBe('0.2');
    }
    const shown = await runCli(['version', '--endpoints', members[1]!.clientUrl]);
    expect(shown.stdout).toMatch(/^etcetera 0\.2\.0.*\netcd API 3\.5\.17\ndata format 2 \(reads 1 to 2\)\n/);
    expect(shown.stdout).toContain(`cluster version 0.2 (${members[1]!.clientUrl}, a member of build 0.2.0`);
    const table = await runCli(['status', '--endpoints', members.map((m) => m.clientUrl).join(',')]);
    expect(table.stdout.match(/\| 0\.2\.0\S* +\|/g)).toHaveLength(3);
    await expectAllKeys(members);

    // Downgrade: the followers first, so the leader that meets the older build runs this one and lowers it.
    const leader = (await status(members[0]!)).leader;
    const statuses = await Promise.all(members.map(status));
    const order = [...members.filter((_, i) => statuses[i]!.member !== leader), ...members.filter((_, i) => statuses[i]!.member === leader)];
    const downgraded = new Set<ServerProcess>();
    for (const [step, m] of order.entries()) {
      const i = members.indexOf(m);
      members[i] = await restart(m, oldCli);
      downgraded.add(members[i]!);
      await put(members[i]!, `k/downgraded-${step}`);
      if (step === 0) {
        for (const newer of members.filter((x) => !downgraded.has(x))) {
          await waitFor(`${newer.name} lowered to cluster version 0.1`, async () => ((await status(newer)).clusterVersion === '0.1' ? true : undefined), 20_000);
          await waitFor(`${newer.name} records format 1`, async () => (dataVersion(newer)?.dataFormat === 1 ? true : undefined), 5_000);
        }
      }
    }
    for (const m of members) expect((await status(m)).build).toBeUndefined();
    await expectAllKeys(members);
  }, 120_000);
});
