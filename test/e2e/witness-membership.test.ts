/**
 * A witness's membership through the operator's tools (issue 24), with real processes on 127.0.0.1:
 * `etcdctl member remove` of a witness (it stops by itself, the data members go on), and the documented way to
 * turn a data member into a witness and back without losing quorum: add the newcomer first (a witness votes at
 * once; a data member joins as a learner and is promoted once caught up), then remove the old one. A writer
 * puts all along; no gap between acknowledged writes may exceed two election timeouts (plus the client's
 * slack), and every acknowledged key is on the data member that joined last.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { clientOf, etcdctl, exitWithin, freePort, haveEtcdctl, killAll, startServer, waitFor, waitForVoters, type ListedMember, type ServerProcess } from './harness.js';

afterAll(() => killAll());

/** The harness runs every process with --election-timeout 1000. */
const electionTimeoutMs = 1000;
/** Beyond two election timeouts: the client's redial and round trips when the leader changes. */
const clientSlackMs = 1000;
const writeEveryMs = 100;
const attemptMs = 1500;

/** Waits until exactly these members are listed, all voters. */
function voters(sp: ServerProcess, names: string[]): Promise<ListedMember[]> {
  const want = [...names].sort().join();
  return waitForVoters(clientOf(sp), names.length, {
    what: `voters ${names.join(',')}`,
    also: (list) => list.map((x) => x.name).sort().join() === want,
    timeoutMs: 30_000,
  });
}

/** etcdctl wants the member id in hex; etcd3 lists it in decimal. */
function hexId(list: ListedMember[], name: string): string {
  const m = list.find((x) => x.name === name);
  if (m === undefined) throw new Error(`${name} is not listed`);
  return BigInt(m.id).toString(16);
}

/**
 * Puts a new key every writeEveryMs through whichever data member answers; records the keys acknowledged and
 * the longest time between two acknowledgements (a lost quorum shows as a gap that never closes).
 */
class Writer {
  readonly acked: string[] = [];
  gapMsMax = 0;
  #last = Date.now();
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;
  #inflight = new Set<Promise<void>>();
  targets: ServerProcess[];

  constructor(targets: ServerProcess[]) {
    this.targets = targets;
  }

  start(): void {
    this.#last = Date.now();
    this.#timer = setInterval(() => {
      const key = `conv-${String(this.#seq++).padStart(5, '0')}`;
      const target = this.targets[this.#seq % this.targets.length]!;
      const p = this.#put(target, key).finally(() => this.#inflight.delete(p));
      this.#inflight.add(p);
      this.gapMsMax = Math.max(this.gapMsMax, Date.now() - this.#last);
    }, writeEveryMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await Promise.all(this.#inflight);
  }

  async #put(sp: ServerProcess, key: string): Promise<void> {
    const c = new Etcd3({ hosts: sp.clientUrl, dialTimeout: attemptMs });
    try {
      const ok = await Promise.race([
        c.put(key).value(key).then(() => true, () => false),
        new Promise<boolean>((r) => setTimeout(() => r(false), attemptMs)),
      ]);
      if (ok) {
        this.acked.push(key);
        this.#last = Date.now();
      }
    } finally {
      c.close();
    }
  }
}

async function holdsAll(sp: ServerProcess, keys: string[]): Promise<void> {
  await waitFor(`${sp.name} holds every acknowledged key`, async () => {
    const held = new Set(await clientOf(sp).getAll().prefix('conv-').keys());
    return keys.every((k) => held.has(k)) ? true : undefined;
  }, 30_000);
}

describe('a witness in the membership', () => {
  it.runIf(haveEtcdctl())('etcdctl member remove of a witness: it stops by itself, member list shows the data members, writes go on', async () => {
    const token = 'wrm';
    const a = await startServer({ name: `${token}-a`, args: ['--cluster-init', '--token', token] });
    const b = await startServer({ name: `${token}-b`, args: ['--server', a.clientUrl, '--token', token] });
    await voters(a, [a.name, b.name]);
    const w = await startServer({ name: `${token}-w`, command: 'witness', args: ['--server', a.clientUrl, '--token', token] });
    const list = await voters(a, [a.name, b.name, w.name]);
    // What etcdctl shows for a witness: a started voter with its peer URL and no client URL.
    const table = await etcdctl(a.clientUrl, ['member', 'list']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^${hexId(list, w.name)}, started, ${w.name}, ${w.peerUrl}, , false$`, 'm'));

    const removed = await etcdctl(b.clientUrl, ['member', 'remove', hexId(list, w.name)]);
    expect(removed.stderr).toBe('');
    // etcdctl pads the id to 16 columns (%16x).
    expect(removed.stdout).toMatch(new RegExp(`Member +${hexId(list, w.name)} removed from cluster`));
    const exit = await exitWithin(w, 10_000);
    if (exit !== 0) console.log(w.output.slice(-40).join('\n'));
    expect(exit).toBe(0);
    expect(w.output.join('\n')).toContain('removed from the cluster');
    await voters(a, [a.name, b.name]);
    await clientOf(a).put('after-witness-removed').value('x');
    expect((await clientOf(b).get('after-witness-removed').string())).toBe('x');
  }, 120_000);

  it('etcd\'s add-then-start (--initial-cluster-state existing) is refused for a witness, pointing at --server and --token', async () => {
    // etcd's MemberAdd has no witness field: a member added with it would be a data voter, never a witness.
    const peerPort = await freePort();
    const w = await startServer({
      name: 'wx', command: 'witness', waitReady: false, peerPort,
      args: ['--initial-cluster', `wa=http://127.0.0.1:1,wx=http://127.0.0.1:${peerPort}`, '--initial-cluster-state', 'existing'],
    });
    const code = await exitWithin(w, 15_000);
    expect(w.output.join('\n')).toContain('a witness joins a running cluster with --server');
    expect(code).toBe(1);
  }, 30_000);

  it.runIf(haveEtcdctl())('a data member replaced by a witness, then the witness by a data member: quorum kept throughout, nothing acknowledged lost', async () => {
    const token = 'wconv';
    const a = await startServer({ name: `${token}-a`, args: ['--cluster-init', '--token', token] });
    const b = await startServer({ name: `${token}-b`, args: ['--server', a.clientUrl, '--token', token] });
    const c = await startServer({ name: `${token}-c`, args: ['--server', a.clientUrl, '--token', token] });
    await voters(a, [a.name, b.name, c.name]);
    const writer = new Writer([a, b]);
    writer.start();
    try {
      // Data member c → witness w: add w first (4 voters, quorum 3), then remove c (3 voters, quorum 2).
      const w = await startServer({ name: `${token}-w`, command: 'witness', args: ['--server', a.clientUrl, '--token', token] });
      let list = await voters(a, [a.name, b.name, c.name, w.name]);
      expect((await etcdctl(a.clientUrl, ['member', 'remove', hexId(list, c.name)])).code).toBe(0);
      expect(await exitWithin(c, 10_000)).toBe(0);
      await voters(a, [a.name, b.name, w.name]);
      // Witness w → data member d: d joins as a learner, is promoted once caught up (4 voters), then w goes.
      const d = await startServer({ name: `${token}-d`, args: ['--server', a.clientUrl, '--token', token] });
      list = await voters(a, [a.name, b.name, w.name, d.name]);
      expect((await etcdctl(a.clientUrl, ['member', 'remove', hexId(list, w.name)])).code).toBe(0);
      expect(await exitWithin(w, 10_000)).toBe(0);
      list = await voters(a, [a.name, b.name, d.name]);
      expect(list.find((m) => m.name === d.name)?.clientURLs).toEqual([d.clientUrl]);
      writer.targets = [a, b, d];
      await new Promise((r) => setTimeout(r, 1000));
      await writer.stop();
      expect(writer.acked.length).toBeGreaterThan(10);
      console.log(`conversion: ${writer.acked.length} writes acknowledged, longest gap ${writer.gapMsMax} ms`);
      expect(writer.gapMsMax).toBeLessThanOrEqual(2 * electionTimeoutMs + clientSlackMs);
      await holdsAll(d, writer.acked);
    } finally {
      await writer.stop();
    }
  }, 180_000);
});
