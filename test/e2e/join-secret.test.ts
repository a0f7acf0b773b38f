/**
 * Issue 20, item 2: a statically bootstrapped cluster whose token is etcd's public default
 * (--initial-cluster-token etcd-cluster) accepts no join, through the client port or the peer port, and says
 * why on both sides; with a secret --token the same static cluster accepts one. Before, anyone who reached a
 * port joined with the public token, was promoted and received every key.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { clientOf, closeClients, freePort, killAll, sleep, startServer, waitForVoters } from './harness.js';

afterAll(async () => {
  closeClients();
  await killAll();
}, 30_000);

async function staticMember(name: string, extra: string[]) {
  const peerPort = await freePort();
  return startServer({ name, peerPort, args: ['--initial-cluster', `${name}=http://127.0.0.1:${peerPort}`, '--initial-cluster-state', 'new', ...extra] });
}

describe('joins need a secret token (issue 20, item 2)', () => {
  it('refuses a join into a static cluster on the public token, through either port, and warns at start', async () => {
    const s = await staticMember('pub', []);
    expect(s.output.join('\n')).toContain('joins are refused: this cluster accepts no joins');
    for (const through of [s.clientUrl, s.peerUrl]) {
      const j = await startServer({ name: 'intruder', args: ['--server', through, '--token', 'etcd-cluster'], waitReady: false });
      const code = await Promise.race([j.exited, sleep(20_000).then(() => 'still running')]);
      expect(code).toBe(1);
      expect(j.output.join('\n')).toContain('this cluster accepts no joins');
    }
    const list = await clientOf(s).cluster.memberList({});
    expect(list.members.map((m) => m.name)).toEqual(['pub']);
  }, 90_000);

  it('accepts a join into a static cluster started with a secret --token', async () => {
    const s = await staticMember('sec', ['--token', 'a-real-secret']);
    expect(s.output.join('\n')).not.toContain('joins are refused');
    await startServer({ name: 'friend', args: ['--server', s.clientUrl, '--token', 'a-real-secret'] });
    const c = clientOf(s);
    await waitForVoters(c, 2, { what: 'two voters', timeoutMs: 30_000 });
  }, 90_000);
});
