/**
 * Locks and elections as real clients run them against one member: etcdctl's `lock` and `elect` (Go's
 * concurrency recipes over KV, Watch and Lease) with two contenders and a holder that dies, and the etcd3
 * npm client's Lock and Election APIs, including its election recipe run in a loop (issue 13: the client
 * must end every round with working channels).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { etcdctlPath, haveEtcdctl, killAll, startServer, waitFor, type ServerProcess } from './harness.js';

interface Ctl {
  proc: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
}

function ctl(endpoint: string, args: string[]): Ctl {
  const proc = spawn(etcdctlPath, [`--endpoints=${endpoint.replace(/^http:\/\//, '')}`, ...args], {
    env: { ...process.env, ETCDCTL_API: '3' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const collect = (d: Buffer): void => void lines.push(...d.toString().split('\n').filter((l) => l !== ''));
  proc.stdout!.on('data', collect);
  proc.stderr!.on('data', collect);
  return { proc, lines, exited: new Promise((resolve) => proc.once('exit', (code) => resolve(code))) };
}

const running: Ctl[] = [];
function start(endpoint: string, args: string[]): Ctl {
  const c = ctl(endpoint, args);
  running.push(c);
  return c;
}

describe('locks and elections', () => {
  let s: ServerProcess;
  const withEtcdctl = haveEtcdctl();

  beforeAll(async () => {
    s = await startServer({ name: 'locks', args: ['--cluster-init'] });
  }, 60_000);
  afterAll(async () => {
    for (const c of running) c.proc.kill('SIGKILL');
    await killAll();
  });

  it.skipIf(!withEtcdctl)('etcdctl lock: a second contender waits, and gets the lock when the holder dies', async () => {
    const holder = start(s.clientUrl, ['lock', '--ttl=2', 'ctl-lock']);
    await waitFor('the holder to print its key', async () => holder.lines.find((l) => l.startsWith('ctl-lock/')));
    const second = start(s.clientUrl, ['lock', '--ttl=2', 'ctl-lock', 'echo', 'second-ran']);
    await new Promise((r) => setTimeout(r, 1000));
    expect(second.lines).toEqual([]);
    holder.proc.kill('SIGKILL'); // its lease expires within 2 s: the lock passes on
    expect(await second.exited).toBe(0);
    expect(second.lines).toContain('second-ran');
  }, 60_000);

  it.skipIf(!withEtcdctl)('etcdctl elect: an observer sees the leader and its successor after the leader resigns', async () => {
    const observer = start(s.clientUrl, ['elect', '-l', 'ctl-elect']);
    const first = start(s.clientUrl, ['elect', 'ctl-elect', 'alpha']);
    await waitFor('alpha to lead', async () => first.lines.find((l) => l === 'alpha'));
    const second = start(s.clientUrl, ['elect', 'ctl-elect', 'beta']);
    await new Promise((r) => setTimeout(r, 800));
    expect(second.lines).not.toContain('beta');
    first.proc.kill('SIGINT'); // etcdctl resigns on interrupt
    await waitFor('beta to lead', async () => second.lines.find((l) => l === 'beta'));
    await waitFor('the observer to see both', async () => observer.lines.includes('alpha') && observer.lines.includes('beta'));
    expect(observer.lines.filter((l) => !l.startsWith('ctl-elect/'))).toEqual(['alpha', 'beta']);
    second.proc.kill('SIGINT');
    observer.proc.kill('SIGINT');
  }, 60_000);

  it('etcd3 lock: mutual exclusion between two clients, released for the next', async () => {
    const [a, b] = [new Etcd3({ hosts: s.clientUrl }), new Etcd3({ hosts: s.clientUrl })];
    try {
      const held = await a.lock('npm-lock').ttl(2).acquire();
      await expect(b.lock('npm-lock').ttl(2).acquire()).rejects.toThrow(/Failed to acquire a lock/);
      await held.release();
      const next = await b.lock('npm-lock').ttl(2).acquire();
      await next.release();
    } finally {
      a.close();
      b.close();
    }
  });

  it('etcd3 election: three clients campaign, observe and resign with 1 s leases, 50 rounds, channels intact', async () => {
    for (let round = 0; round < 50; round++) {
      const clients = [0, 1, 2].map(() => new Etcd3({ hosts: s.clientUrl }));
      try {
        const elections = clients.map((c) => c.election(`npm-elect-${round}`, 1));
        const observer = await elections[2]!.observe();
        const seen: Array<string | undefined> = [];
        observer.on('change', (v) => seen.push(v));
        // Candidates queue behind v0; each resigns once elected, which elects the next.
        const campaigns = elections.map((e, i) => e.campaign(`v${i}`));
        const pending = new Map(campaigns.map((c, i) => [i, c.wait().then(() => i)]));
        while (pending.size > 0) {
          const winner = await Promise.race(pending.values());
          pending.delete(winner);
          await campaigns[winner]!.resign();
        }
        await observer.cancel();
        clients[0]!.close();
        clients[1]!.close();
        const last = clients[2]!;
        await last.put(`after-${round}`).value('ok');
        expect({ round, value: await last.get(`after-${round}`).string() }).toEqual({ round, value: 'ok' });
        expect(seen.filter((v) => v !== undefined).length).toBeGreaterThan(0);
      } finally {
        for (const c of clients) c.close();
      }
    }
  }, 240_000);
});
