/**
 * Two boards and a witness (issue 24), with real processes on 127.0.0.1: two data members and `etcetera
 * witness`. kill -9 of either data member (leader or follower): writes resume on the survivor within two
 * election timeouts (plus the client's own round trips), and no acknowledged write is lost; the hard case
 * (the survivor was stopped while the leader committed 8 MiB with the witness) within four (its frozen
 * clock counts from its resume), the witness leading only to hand its log over; kill -9 of the witness:
 * the two data members go on. The witness is listed by `member list` with no client URL, and says it is a
 * witness on /health and /metrics.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { clientOf, etcdctl, freePort, haveEtcdctl, killAll, runCli, startServer, waitFor, waitForVoters, waitReady, type ServerProcess, type StartOptions } from './harness.js';

afterAll(() => killAll());

/** The harness runs every process with --election-timeout 1000. */
const electionTimeoutMs = 1000;
/** What the survivor may take beyond two election timeouts: the client's dial, the put's round trips. */
const clientSlackMs = 300;
/** The hard case's writes while the other data member is stopped: 8 MiB in all, beyond any socket buffer. */
const hardCaseWrites = 128;
const hardCaseValueBytes = 64 * 1024;
/**
 * The hard case's bound. The survivor was SIGSTOPped: resumed, its clock counts a whole election timeout
 * (one to two) from its resume before it gives up on the dead leader; then the witness's election, the
 * hand-over of its tail and the survivor's election. A survivor cut off by the network instead would have
 * timed out already.
 */
const hardCaseElectionTimeouts = 4;
/** Writes after which the witness must still hold only a short tail (heartbeats tell it what to drop). */
const tailWrites = 500;
const witnessTailEntriesMax = 16;
/** One attempt of a put against a member that may have no leader yet, and how often a new one starts. */
const attemptMs = 1000;
const attemptEveryMs = 100;

async function members(c: Etcd3): Promise<{ id: string; name: string; isLearner: boolean; clientURLs: string[] }[]> {
  const r = await c.cluster.memberList({ linearizable: true } as never);
  return r.members.map((m) => ({ id: m.ID, name: m.name, isLearner: m.isLearner, clientURLs: m.clientURLs }));
}

/** a (--cluster-init), b (joined, promoted) and witness w, all voters; `before` runs before w joins. */
async function twoBoards(token: string, options: { dataArgs?: string[]; before?: (a: ServerProcess) => Promise<void> } = {}): Promise<{ a: ServerProcess; b: ServerProcess; w: ServerProcess }> {
  const dataArgs = options.dataArgs ?? [];
  const a = await startServer({ name: `${token}-a`, args: ['--cluster-init', '--token', token, ...dataArgs] });
  const b = await startServer({ name: `${token}-b`, args: ['--server', a.clientUrl, '--token', token, ...dataArgs] });
  await waitForVoters(clientOf(a), 2, { what: 'b promoted', timeoutMs: 30_000 });
  await options.before?.(a);
  const w = await startServer({ name: `${token}-w`, command: 'witness', args: ['--server', a.clientUrl, '--token', token] });
  await waitForVoters(clientOf(a), 3, { what: 'three voters', timeoutMs: 30_000 });
  return { a, b, w };
}

/** One put on `sp` with its own client, given up after attemptMs; true when acknowledged. */
async function tryPut(sp: ServerProcess, key: string): Promise<boolean> {
  const c = new Etcd3({ hosts: sp.clientUrl, dialTimeout: attemptMs });
  try {
    const put = c.put(key).value(key).then(() => true, () => false);
    return await Promise.race([put, new Promise<boolean>((r) => setTimeout(() => r(false), attemptMs))]);
  } finally {
    c.close();
  }
}

/**
 * Puts on `sp` until one is acknowledged; returns the milliseconds since `since`. A new attempt starts every
 * attemptEveryMs while earlier ones still wait, so the moment writes resume is seen within that much.
 */
async function writesResume(sp: ServerProcess, since: number, key: string, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let done = false;
    const timer = setInterval(() => {
      if (Date.now() - since > timeoutMs) {
        clearInterval(timer);
        if (!done) reject(new Error(`no write acknowledged on ${sp.name} within ${timeoutMs} ms`));
        done = true;
        return;
      }
      void tryPut(sp, key).then((ok) => {
        if (!ok || done) return;
        done = true;
        clearInterval(timer);
        resolve(Date.now() - since);
      });
    }, attemptEveryMs);
  });
}

async function leaderOf(sps: ServerProcess[]): Promise<ServerProcess> {
  return waitFor('a data leader', async () => {
    for (const sp of sps) {
      const s = await clientOf(sp).maintenance.status();
      if (s.leader === s.header.member_id) return sp;
    }
    return undefined;
  });
}

async function holdsAll(sp: ServerProcess, keys: string[]): Promise<void> {
  const r = await clientOf(sp).getAll().prefix('acked-').keys();
  const held = new Set(r);
  expect(keys.filter((k) => !held.has(k))).toEqual([]);
}

function restart(sp: ServerProcess, command: StartOptions['command'] = 'server'): Promise<ServerProcess> {
  return startServer({ name: sp.name, command, dataDir: sp.dataDir, clientPort: sp.clientPort, peerPort: sp.peerPort });
}

/** a, b and witness w bootstrapped statically (etcd's --initial-cluster, plus --initial-cluster-witnesses w). */
async function staticTwoBoards(): Promise<{ a: ServerProcess; b: ServerProcess; w: ServerProcess }> {
  const names = ['sa', 'sb', 'sw'];
  const ports = await Promise.all(names.map(async () => ({ client: await freePort(), peer: await freePort() })));
  const cluster = names.map((n, i) => `${n}=http://127.0.0.1:${ports[i]!.peer}`).join(',');
  const flags = ['--initial-cluster', cluster, '--initial-cluster-state', 'new', '--initial-cluster-witnesses', 'sw', '--initial-cluster-token', 'static-boards'];
  const start = (i: number, command: StartOptions['command'], waitReady: boolean): Promise<ServerProcess> =>
    startServer({ name: names[i]!, command, clientPort: ports[i]!.client, peerPort: ports[i]!.peer, waitReady, args: flags });
  const [a, b, w] = await Promise.all([start(0, 'server', false), start(1, 'server', false), start(2, 'witness', true)]);
  await Promise.all([waitReady(a!), waitReady(b!)]);
  return { a: a!, b: b!, w: w! };
}

describe('two boards and a witness', () => {
  it('static bootstrap: the witness is a voter with no client URL from the start, and the data members survive either loss', async () => {
    const { a, b, w } = await staticTwoBoards();
    const list = await waitForVoters(clientOf(a), 3, { what: 'three voters' });
    expect(list.find((m) => m.name === w.name)?.clientURLs).toEqual([]);
    await waitFor('the witness hears a leader', async () => ((await fetch(`${w.clientUrl}/health`)).ok ? true : undefined));
    const leader = await leaderOf([a, b]);
    const survivor = leader === a ? b : a;
    await clientOf(leader).put('acked-static').value('x');
    const killedAt = Date.now();
    await leader.kill('SIGKILL');
    const took = await writesResume(survivor, killedAt, 'acked-static-after', 10 * electionTimeoutMs);
    expect(took).toBeLessThanOrEqual(2 * electionTimeoutMs + clientSlackMs);
    await holdsAll(survivor, ['acked-static', 'acked-static-after']);
  }, 120_000);

  it('answers etcdctl endpoint health and endpoint status: healthy while it hears a leader, unhealthy once both data members stop (issue 32, item 4)', async () => {
    if (!haveEtcdctl()) return;
    const { a, b, w } = await staticTwoBoards();
    const list = await waitForVoters(clientOf(a), 3, { what: 'three voters' });
    const witnessHex = BigInt(list.find((m) => m.name === w.name)!.id).toString(16);
    await waitFor('the witness hears a leader', async () => ((await fetch(`${w.clientUrl}/health`)).ok ? true : undefined));
    const healthy = await etcdctl(w.clientUrl, ['endpoint', 'health']);
    expect({ code: healthy.code, out: healthy.stdout + healthy.stderr }).toMatchObject({ code: 0, out: expect.stringMatching(/is healthy/) });
    // Simple output: endpoint, ID, version, db size, is leader, is learner, raft term, raft index, applied index, errors.
    const status = await etcdctl(w.clientUrl, ['endpoint', 'status']);
    expect(status.code).toBe(0);
    const fields = status.stdout.trim().split(', ');
    expect(fields.slice(1, 6)).toEqual([witnessHex, '3.5.17', '0 B', 'false', 'false']);
    expect(Number(fields[6])).toBeGreaterThan(0);
    expect(fields[9] ?? '').toBe('');
    // Anything else is refused: a witness serves no key.
    expect((await etcdctl(w.clientUrl, ['get', 'k'])).stderr).toMatch(/etcdserver: permission denied/);
    expect((await etcdctl(w.clientUrl, ['put', 'k', 'v'])).stderr).toMatch(/Unimplemented/);

    await Promise.all([a.kill('SIGKILL'), b.kill('SIGKILL')]);
    await waitFor('the witness hears no leader', async () => ((await fetch(`${w.clientUrl}/health`)).status === 503 ? true : undefined));
    const unhealthy = await etcdctl(w.clientUrl, ['endpoint', 'health', '--command-timeout=1s']);
    expect({ code: unhealthy.code, out: unhealthy.stdout + unhealthy.stderr }).toMatchObject({ code: 1, out: expect.stringMatching(/is unhealthy/) });
    expect(unhealthy.stderr).toMatch(/etcdserver: no leader/);
    const lost = await etcdctl(w.clientUrl, ['endpoint', 'status']);
    expect(lost.code).toBe(0);
    expect(lost.stdout.trim().split(', ')[9]).toBe('etcdserver: no leader');
  }, 120_000);

  it('is listed with no client URL, says it is a witness, and kill -9 of either data member or the witness loses nothing', async () => {
    let { a, b, w } = await twoBoards('tb');
    const list = await members(clientOf(a));
    expect(list.find((m) => m.name === w.name)?.clientURLs).toEqual([]);
    const health = await (await fetch(`${w.clientUrl}/health`)).json() as { health: string; reason: string };
    expect(health).toEqual({ health: 'true', reason: 'witness: holds no data, serves no client' });
    expect(await (await fetch(`${w.clientUrl}/metrics`)).text()).toMatch(/^etcetera_server_is_witness 1$/m);
    // `etcetera status` over all three: the witness is a healthy voter, not `unreachable` (issue 32, item 4).
    const status = await runCli(['status', '--endpoints', [a, b, w].map((s) => s.clientUrl).join(',')]);
    expect({ code: status.code, stderr: status.stderr }).toEqual({ code: 0, stderr: '' });
    expect(status.stdout).not.toMatch(/unreachable|HTTP 404/);
    const ws = await (await fetch(`${w.clientUrl}/status`)).json() as { health: boolean; isLearner: boolean; healthReason: string; revision: number };
    expect(ws).toMatchObject({ health: true, isLearner: false, healthReason: 'witness: holds no data, serves no client', revision: 0 });
    expect((await fetch(`${w.clientUrl}/v3/kv/range`, { method: 'POST', body: '{}' })).status).toBe(404);
    const witnessId = list.find((m) => m.name === w.name)!.id;
    const first = await leaderOf([a, b]);
    await expect(clientOf(first).maintenance.moveLeader({ targetID: witnessId })).rejects.toThrow(/bad leader transferee/);

    const acked: string[] = [];
    const measured: number[] = [];
    for (const victim of ['leader', 'follower'] as const) {
      for (let i = 0; i < 20; i++) {
        const key = `acked-${victim}-${i}`;
        await clientOf(a).put(key).value(key).catch(() => clientOf(b).put(key).value(key));
        acked.push(key);
      }
      const leader = await leaderOf([a, b]);
      const [dead, survivor] = (victim === 'leader') === (leader === a) ? [a, b] : [b, a];
      const killedAt = Date.now();
      await dead.kill('SIGKILL');
      const took = await writesResume(survivor, killedAt, `acked-after-${victim}`, 10 * electionTimeoutMs);
      acked.push(`acked-after-${victim}`);
      measured.push(took);
      expect(took).toBeLessThanOrEqual(2 * electionTimeoutMs + clientSlackMs);
      await holdsAll(survivor, acked);
      const back = await restart(dead);
      if (dead === a) a = back;
      else b = back;
      await waitFor(`${dead.name} caught up`, async () => ((await clientOf(back).getAll().prefix('acked-').keys()).length === acked.length ? true : undefined), 30_000);
    }
    console.log(`writes resumed after kill -9 of the leader in ${measured[0]} ms, of the follower in ${measured[1]} ms`);

    const killedAt = Date.now();
    await w.kill('SIGKILL');
    const took = await writesResume(a, killedAt, 'acked-after-witness', 10 * electionTimeoutMs);
    expect(took).toBeLessThanOrEqual(2 * electionTimeoutMs + clientSlackMs);
    w = await restart(w, 'witness');
    await holdsAll(b, [...acked, 'acked-after-witness']);
    await waitFor('the restarted witness hears a leader', async () => ((await fetch(`${w.clientUrl}/health`)).ok ? true : undefined));

    // Its log stays a tail: what every data member holds durably is dropped; it never built a store.
    for (let i = 0; i < tailWrites; i++) await clientOf(a).put(`tail-${i}`).value('x');
    const held = await waitFor('the witness log released', async () => {
      const entries = Number(/^etcetera_witness_log_entries (\d+)$/m.exec(await (await fetch(`${w.clientUrl}/metrics`)).text())?.[1]);
      return entries <= witnessTailEntriesMax ? entries : undefined;
    });
    const rssMiB = async (url: string): Promise<string> =>
      (Number(/^process_resident_memory_bytes (\d+)$/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1]) / 2 ** 20).toFixed(1);
    console.log(`witness after ${tailWrites} more writes: ${held} log entries held, RSS ${await rssMiB(w.clientUrl)} MiB ` +
      `(data member: ${await rssMiB(`http://127.0.0.1:${a.metricsPort}`)} MiB)`);
    expect(existsSync(join(w.dataDir, 'member', 'db'))).toBe(false);
    expect(existsSync(join(w.dataDir, 'member', 'wal'))).toBe(true);
  }, 240_000);

  it('a witness joining after the data members compacted their log gets snapshot metadata only, and still carries the hard case', async () => {
    const { a, b, w } = await twoBoards('cj', {
      dataArgs: ['--snapshot-count', '20'],
      before: async (first) => {
        for (let i = 0; i < 100; i++) await clientOf(first).put(`acked-early-${i}`).value('x');
      },
    });
    await waitFor('the witness hears a leader', async () => ((await fetch(`${w.clientUrl}/health`)).ok ? true : undefined));
    // It was sent the compacted log's start as metadata, never the backend.
    expect(w.output.some((line) => line.includes('applying a received snapshot failed'))).toBe(false);
    expect(Number(/^etcetera_witness_log_entries (\d+)$/m.exec(await (await fetch(`${w.clientUrl}/metrics`)).text())?.[1])).toBeLessThan(100);
    const leader = await leaderOf([a, b]);
    const other = leader === a ? b : a;
    other.proc.kill('SIGSTOP');
    for (let i = 0; i < 10; i++) await clientOf(leader).put(`acked-late-${i}`).value('x');
    await leader.kill('SIGKILL');
    other.proc.kill('SIGCONT');
    await writesResume(other, Date.now(), 'acked-late-after', 10 * electionTimeoutMs);
    const keys = [...Array.from({ length: 100 }, (_, i) => `acked-early-${i}`), ...Array.from({ length: 10 }, (_, i) => `acked-late-${i}`)];
    await holdsAll(other, keys);
  }, 120_000);

  it('the hard case: the leader commits with the witness while the other data member is stopped, then dies; the survivor leads with every write', async () => {
    const { a, b, w } = await twoBoards('hc');
    const leader = await leaderOf([a, b]);
    const other = leader === a ? b : a;
    other.proc.kill('SIGSTOP');
    // More than the stopped member's socket buffers hold: it cannot find these writes there when it resumes.
    const acked: string[] = [];
    const value = Buffer.alloc(hardCaseValueBytes, 0x61);
    for (let i = 0; i < hardCaseWrites; i++) {
      const key = `acked-hard-${i}`;
      await clientOf(leader).put(key).value(value);
      acked.push(key);
    }
    const killedAt = Date.now();
    await leader.kill('SIGKILL');
    other.proc.kill('SIGCONT');
    const took = await writesResume(other, killedAt, 'acked-hard-after', 10 * electionTimeoutMs);
    console.log(`hard case: writes resumed on the survivor ${took} ms after the leader's kill -9`);
    // Measured 1.8–3.0 s (see hardCaseElectionTimeouts).
    expect(took).toBeLessThanOrEqual(hardCaseElectionTimeouts * electionTimeoutMs);
    await holdsAll(other, [...acked, 'acked-hard-after']);
    // The survivor could not win the witness's vote: the witness led, only to hand its log over.
    expect(w.output.some((line) => line.includes('"leader changed"') && line.includes('"role":"leader"'))).toBe(true);
  }, 120_000);
});
