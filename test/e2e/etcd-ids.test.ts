/**
 * Static bootstrap IDs as etcd's: the same `--initial-cluster` and `--initial-cluster-token` give the same
 * member IDs and cluster ID from a real etcd 3.4 cluster and from an etcetera cluster on the same peer URLs
 * (compared through `etcdctl member list -w json`, IDs read as exact 64-bit integers).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { etcdctl, freePort, haveEtcdctl, killAll, removeDir, startServer, tempDir, waitFor } from './harness.js';
import { haveEtcd, killEtcds, startEtcd } from './etcd-reference.js';

const enabled = haveEtcdctl() && haveEtcd();

afterAll(async () => {
  await killEtcds();
  await killAll();
}, 20_000);

interface MemberListIds {
  clusterId: bigint;
  members: Map<string, bigint>;
}

/** JSON numbers above 2^53 lose precision in JSON.parse, so the IDs are cut out of the text. */
function idsOf(json: string): MemberListIds {
  const clusterId = BigInt(/"cluster_id":(\d+)/.exec(json)![1]!);
  const members = new Map<string, bigint>();
  for (const m of json.matchAll(/"ID":(\d+),"name":"([^"]*)"/g)) members.set(m[2]!, BigInt(m[1]!));
  return { clusterId, members };
}

async function memberList(endpoint: string): Promise<MemberListIds | undefined> {
  const r = await etcdctl(endpoint, ['member', 'list', '-w', 'json']);
  if (r.code !== 0) return undefined;
  const ids = idsOf(r.stdout);
  return ids.members.size === 3 && [...ids.members.keys()].every((n) => n !== '') ? ids : undefined;
}

describe.runIf(enabled)('etcd IDs for static bootstrap', () => {
  it('gives the same member and cluster IDs as etcd 3.4 for the same initial cluster and token', async () => {
    const names = ['infra0', 'infra1', 'infra2'];
    const peerPorts = await Promise.all(names.map(() => freePort()));
    const clientPorts = await Promise.all(names.map(() => freePort()));
    const initialCluster = names.map((n, i) => `${n}=http://127.0.0.1:${peerPorts[i]}`).join(',');
    const token = `etcetera-ids-${peerPorts[0]}`;
    const common = (i: number): string[] => [
      '--name', names[i]!,
      '--listen-client-urls', `http://127.0.0.1:${clientPorts[i]}`, '--advertise-client-urls', `http://127.0.0.1:${clientPorts[i]}`,
      '--listen-peer-urls', `http://127.0.0.1:${peerPorts[i]}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPorts[i]}`,
      '--initial-cluster', initialCluster, '--initial-cluster-token', token, '--initial-cluster-state', 'new',
    ];

    const etcdDirs = names.map((n) => tempDir(`etcd-${n}`));
    const etcds = names.map((_, i) => startEtcd([...common(i), '--data-dir', etcdDirs[i]!]));
    const fromEtcd = await waitFor('etcd member list', () => memberList(`127.0.0.1:${clientPorts[0]}`), 30_000);
    await Promise.all(etcds.map((e) => e.kill()));
    etcdDirs.forEach(removeDir);

    const ours = await Promise.all(names.map((n, i) => startServer({
      name: n, clientPort: clientPorts[i]!, peerPort: peerPorts[i]!,
      args: ['--initial-cluster', initialCluster, '--initial-cluster-token', token, '--initial-cluster-state', 'new'],
    })));
    const fromUs = await waitFor('etcetera member list', () => memberList(`127.0.0.1:${clientPorts[1]}`), 30_000);
    expect(fromUs.clusterId.toString(16)).toBe(fromEtcd.clusterId.toString(16));
    expect([...fromUs.members].sort()).toEqual([...fromEtcd.members].sort());
    await Promise.all(ours.map((s) => s.kill()));
    ours.forEach((s) => removeDir(s.dataDir));
  }, 90_000);
});
