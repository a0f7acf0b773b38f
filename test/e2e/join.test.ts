/**
 * Joining the way operators do it (issue 12, items 1, 2, 4, 5, 6), with real processes: `--server` given a
 * member's client URL on any port; errors while joining that say what to fix; a wiped node rejoining under
 * its old name; learners added through the API that stay learners; a join whose ports are busy that leaves
 * the cluster unchanged.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { clientOf, etcdctl, exitWithin, freePort, haveEtcdctl, killAll, removeDir, repoRoot, sleep, startServer, tempDir, waitFor, waitForVoters, type ServerProcess } from './harness.js';
import { join } from 'node:path';

const client = clientOf;
afterAll(() => killAll());

async function members(c: Etcd3): Promise<{ id: string; name: string; isLearner: boolean; peerURLs: string[] }[]> {
  const r = await c.cluster.memberList({ linearizable: true } as never);
  return r.members.map((m) => ({ id: m.ID, name: m.name, isLearner: m.isLearner, peerURLs: m.peerURLs }));
}


describe('--server with a client URL', () => {
  it('joins through a member\'s client URL on a non-standard port, also through a follower, and is promoted', async () => {
    const token = 'via-client-url';
    const a = await startServer({ name: 'ja', args: ['--cluster-init', '--token', token] });
    expect(a.clientPort).not.toBe(2379);
    const b = await startServer({ name: 'jb', args: ['--server', a.clientUrl, '--token', token] });
    const ca = client(a);
    await waitForVoters(ca, 2, { what: 'b promoted', timeoutMs: 30_000 });
    // Through b, a follower: it forwards the join to the leader.
    const c = await startServer({ name: 'jc', args: ['--server', b.clientUrl, '--token', token] });
    await waitForVoters(ca, 3, { what: 'three voters', timeoutMs: 30_000 });
    await ca.put('joined').value('yes');
    expect(await waitFor('replicated to c', async () => (await client(c).get('joined').string()) ?? undefined, 20_000)).toBe('yes');
  }, 120_000);
});

describe('errors while joining', () => {
  it('nothing listening: logs each retry, then exits with one sentence saying what to fix', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const started = Date.now();
    const b = await startServer({ name: 'nl', waitReady: false, args: ['--server', nowhere, '--token', 't'] });
    expect(await exitWithin(b, 40_000)).toBe(1);
    expect(Date.now() - started).toBeLessThan(40_000);
    const out = b.output.join('\n');
    expect(out).toMatch(/failed \(attempt 2\); retrying/);
    expect(out).toContain(`nothing is listening at ${nowhere} (connection refused): start that member first, or give --server the client or peer URL of a running member`);
  }, 60_000);

  it('a member that requires peer TLS: a joiner without the CA gets a sentence naming the flags, at once', async () => {
    const fixtures = join(repoRoot, 'test/peer/fixtures');
    const [ca, cert, key] = ['ca.pem', 'peer.pem', 'peer.key'].map((f) => join(fixtures, f));
    const pp = await freePort();
    const peerUrl = `https://127.0.0.1:${pp}`;
    const a = await startServer({
      name: 'tlsa', peerPort: pp,
      args: ['--cluster-init', '--token', 'tt', '--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl,
        '--peer-cert-file', cert!, '--peer-key-file', key!, '--peer-trusted-ca-file', ca!, '--peer-client-cert-auth'],
    });
    const started = Date.now();
    const b = await startServer({ name: 'tlsb', waitReady: false, args: ['--server', peerUrl, '--token', 'tt'] });
    expect(await exitWithin(b, 40_000)).toBe(1);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(b.output.join('\n')).toMatch(new RegExp(`the TLS handshake with ${peerUrl.replace(/[.:/]/g, '\\$&')} failed \\(.*\\): give --peer-trusted-ca-file`));
    await a.kill();
  }, 60_000);

  it('a wrong token: refused at once with a sentence naming --token', async () => {
    const a = await startServer({ name: 'wa', args: ['--cluster-init', '--token', 'right'] });
    const b = await startServer({ name: 'wb', waitReady: false, args: ['--server', a.clientUrl, '--token', 'wrong'] });
    expect(await exitWithin(b, 20_000)).toBe(1);
    expect(b.output.join('\n')).toContain(`the member at ${a.clientUrl} refused this member's join token`);
    expect((await members(client(a))).length).toBe(1);
    await a.kill();
  }, 40_000);
});

describe('replacing members', () => {
  it('a wiped node rejoining under its old name and URLs replaces its stale member under a new id', async () => {
    const token = 'replace';
    const a = await startServer({ name: 'ra', args: ['--cluster-init', '--token', token] });
    const ca = client(a);
    let b = await startServer({ name: 'rb', args: ['--server', a.clientUrl, '--token', token] });
    const c = await startServer({ name: 'rc', args: ['--server', a.clientUrl, '--token', token] });
    const three = await waitForVoters(ca, 3, { what: 'three voters', timeoutMs: 30_000 });
    const oldB = three.find((m) => m.name === 'rb')!.id;
    await ca.put('before').value('1');
    await b.kill('SIGKILL');
    removeDir(b.dataDir); // reinstall
    b = await startServer({ name: 'rb', dataDir: b.dataDir, clientPort: b.clientPort, peerPort: b.peerPort, args: ['--server', a.clientUrl, '--token', token] });
    const after = await waitForVoters(ca, 3, { what: 'b replaced and promoted', also: (m) => !m.some((x) => x.id === oldB), timeoutMs: 40_000 });
    expect(after.map((m) => m.name).sort()).toEqual(['ra', 'rb', 'rc']);
    expect(await waitFor('b has the data', async () => (await client(b).get('before').string()) ?? undefined, 20_000)).toBe('1');
    expect(b.output.join('\n')).not.toMatch(/AssertionError/);
    expect(c.proc.exitCode).toBeNull();
  }, 150_000);

  it('remove, then rejoin: the removed member exits; wiped, it joins again under a new id', async () => {
    const token = 'remove-rejoin';
    const a = await startServer({ name: 'xa', args: ['--cluster-init', '--token', token] });
    const ca = client(a);
    let b = await startServer({ name: 'xb', args: ['--server', a.clientUrl, '--token', token] });
    const two = await waitForVoters(ca, 2, { what: 'two voters', timeoutMs: 30_000 });
    const oldB = two.find((m) => m.name === 'xb')!.id;
    await ca.cluster.memberRemove({ ID: oldB });
    expect(await exitWithin(b, 15_000)).toBe(0);
    expect(b.output.join('\n')).toMatch(/removed from the cluster/);
    removeDir(b.dataDir);
    b = await startServer({ name: 'xb', dataDir: b.dataDir, clientPort: b.clientPort, peerPort: b.peerPort, args: ['--server', a.clientUrl, '--token', token] });
    const back = await waitForVoters(ca, 2, { what: 'b back as a voter', timeoutMs: 30_000 });
    expect(back.find((m) => m.name === 'xb')!.id).not.toBe(oldB);
  }, 90_000);

  it.runIf(haveEtcdctl())('member add with a peer URL that is taken answers etcd\'s error', async () => {
    const a = await startServer({ name: 'pa', args: ['--cluster-init', '--token', 'p'] });
    await waitFor('a leader', async () => (await client(a).maintenance.status()).leader !== '0' || undefined, 20_000);
    const r = await etcdctl(a.clientUrl, ['member', 'add', 'dup', `--peer-urls=${a.peerUrl}`]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('etcdserver: Peer URLs already exists');
    expect(a.proc.exitCode).toBeNull();
    await a.kill();
  }, 40_000);

  it.runIf(haveEtcdctl())('a learner added through the API stays a learner until member promote (only --server joiners are promoted)', async () => {
    const a = await startServer({ name: 'la', args: ['--cluster-init', '--token', 'l'] });
    await waitFor('a leader', async () => (await client(a).maintenance.status()).leader !== '0' || undefined, 20_000);
    const url = `http://127.0.0.1:${await freePort()}`;
    const r = await etcdctl(a.clientUrl, ['member', 'add', 'lx', '--learner', `--peer-urls=${url}`]);
    expect(r.code, r.stderr).toBe(0);
    await sleep(4000); // the promotion loop runs every second
    const m = await members(client(a));
    expect(m.find((x) => x.peerURLs.includes(url))?.isLearner).toBe(true);
    await a.kill();
  }, 40_000);
});

describe('a join that cannot start', () => {
  it('a busy client port is found before asking to be added: the cluster is unchanged', async () => {
    const a = await startServer({ name: 'ba', args: ['--cluster-init', '--token', 'busy'] });
    const busy = await freePort();
    const holder: Server = createServer();
    await new Promise<void>((r) => holder.listen(busy, '127.0.0.1', r));
    try {
      const b = await startServer({ name: 'bb', clientPort: busy, waitReady: false, args: ['--server', a.clientUrl, '--token', 'busy'] });
      expect(await exitWithin(b, 20_000)).toBe(1);
      expect(b.output.join('\n')).toMatch(/cannot listen on http:\/\/127\.0\.0\.1:\d+ \(EADDRINUSE\)/);
    } finally {
      holder.close();
    }
    expect((await members(client(a))).map((m) => m.name)).toEqual(['ba']);
    await a.kill();
  }, 40_000);

  it('a start that fails after the add (an unreadable client certificate) removes the member again', async () => {
    const a = await startServer({ name: 'fa', args: ['--cluster-init', '--token', 'fail'] });
    const bad = join(tempDir('bad-cert'), 'bad.pem');
    writeFileSync(bad, 'not a certificate\n');
    const cp = await freePort();
    const https = `https://127.0.0.1:${cp}`;
    const b = await startServer({
      name: 'fb', clientPort: cp, waitReady: false,
      args: ['--server', a.clientUrl, '--token', 'fail', '--listen-client-urls', https, '--advertise-client-urls', https, '--cert-file', bad, '--key-file', bad],
    });
    expect(await exitWithin(b, 30_000)).toBe(1);
    expect(b.output.join('\n')).toMatch(/start failed after joining: removed this member from the cluster again/);
    expect((await members(client(a))).map((m) => m.name)).toEqual(['fa']);
    expect(existsSync(join(b.dataDir, 'member'))).toBe(false); // the next start joins afresh
    await a.kill();
  }, 60_000);
});
