/**
 * SIGTERM on the leader: it hands leadership to a caught-up voter before stopping (etcd's
 * TransferLeadership on shutdown), so the cluster has a new leader without waiting out an election
 * timeout, and the process exits 0.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { killAll, startServer, waitFor, type ServerProcess } from './harness.js';

const clients: Etcd3[] = [];
afterAll(async () => {
  for (const c of clients) c.close();
  await killAll();
});

describe('graceful stop', () => {
  it('hands leadership over before a leader stops', async () => {
    const token = 'graceful';
    const a = await startServer({ name: 'a', args: ['--cluster-init', '--token', token] });
    const ms: ServerProcess[] = [a];
    for (const name of ['b', 'c']) ms.push(await startServer({ name, args: ['--server', a.peerUrl, '--token', token] }));
    const ca = new Etcd3({ hosts: a.clientUrl });
    clients.push(ca);
    await waitFor('three voters', async () => {
      const r = await ca.cluster.memberList({ linearizable: true } as never);
      return r.members.length === 3 && r.members.every((m) => !m.isLearner) ? r : undefined;
    }, 30_000);
    const statusOf = async (m: ServerProcess) => {
      const c = new Etcd3({ hosts: m.clientUrl });
      clients.push(c);
      return c.maintenance.status();
    };
    const leaderId = (await statusOf(a)).leader;
    const leader = (await Promise.all(ms.map(async (m) => ({ m, s: await statusOf(m) })))).find((x) => x.s.header.member_id === leaderId)!.m;
    const rest = ms.filter((m) => m !== leader);
    const termBefore = Number((await statusOf(rest[0]!)).raftTerm);
    const stoppedAt = Date.now();
    leader.proc.kill('SIGTERM');
    const newLeader = await waitFor('a new leader', async () => {
      const s = await statusOf(rest[0]!);
      return s.leader !== '0' && s.leader !== leaderId ? s : undefined;
    }, 10_000);
    // A transfer is one round trip plus the transferee's election (an ordinary failover waits out an
    // election timeout of 1–2 s first); the bound is loose for loaded CI machines, the log line is exact.
    expect(Date.now() - stoppedAt).toBeLessThan(3000);
    expect(await leader.exited).toBe(0);
    expect(leader.output.join('\n')).toContain('leadership transferred before stopping');
    expect(newLeader.leader).not.toBe(leaderId);
    expect(Number(newLeader.raftTerm)).toBe(termBefore + 1);
    expect(leader.output.join('\n')).toMatch(/stopping/);
  }, 90_000);
});
