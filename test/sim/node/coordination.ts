/**
 * Lock and Election clients of the production-node simulator (issue 25): they run etcd's v3lock and
 * v3election recipes (src/api/concurrency, the code the Lock and Election services run) on the member a
 * client picks, each contender on its own short session lease kept alive through random members, under the
 * seed's chaos. What they were told is recorded and judged (coordination-check.ts) against the key space the
 * watchers saw:
 * - a Lock answer at revision R: at R the lock's key is the oldest live key under `name/` (etcd's Mutex
 *   ownership), so no two holders overlap: [R, deletion of the key) is disjoint from every other holder's;
 * - a Campaign answer: at the member's revision when it answered, no older candidate key is alive (unless
 *   the winner's own key is already gone: its session expired while it waited, which etcd's Campaign does
 *   not notice either);
 * - a Leader answer at revision R: the key it names is the oldest live candidate at R.
 */
import { fromUtf8, utf8 } from '../../../src/base/bytes.js';
import type { Prng } from '../../../src/base/prng.js';
import { campaign, leader, proclaim, resign } from '../../../src/api/concurrency/election.js';
import { lock, unlock } from '../../../src/api/concurrency/lock.js';
import type { RequestContext } from '../../../src/node/server-api.js';
import type { ServerCluster } from './server-cluster.js';
import type { ServerNode } from './server-node.js';
import type { SimAuth } from './sim-auth.js';
import { serving } from './workload.js';

/** Three contenders for one lock, one alone on another (which only a lost unlock, left to its lease, contends). */
export const lockNames = ['locks/x', 'locks/x', 'locks/x', 'locks/y'];
export const electionName = 'elections/e';
const sessionTtlSeconds = 3;
const callMs = 8000;

export interface LockHold { client: number; name: string; key: string; rev: number; member: string }
export interface ElectionWin { client: number; name: string; key: string; createRev: number; rev: number; member: string }
export interface LeaderSeen { client: number; name: string; key: string; createRev: number; rev: number; member: string }

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

export class Coordination {
  readonly holds: LockHold[] = [];
  readonly wins: ElectionWin[] = [];
  readonly seen: LeaderSeen[] = [];
  readonly counts = { locks: 0, lockFailures: 0, wins: 0, campaignFailures: 0, proclaims: 0, leaders: 0 };
  readonly #c: ServerCluster;
  readonly #rng: Prng;
  readonly #auth: SimAuth | undefined;
  readonly #running: Promise<void>[] = [];
  #stopped = false;
  #values = 0;

  constructor(c: ServerCluster, rng: Prng, auth: SimAuth | undefined) {
    this.#c = c;
    this.#rng = rng;
    this.#auth = auth;
  }

  start(lockers: number, campaigners: number, observers: number): void {
    let client = 2000;
    for (let i = 0; i < lockers; i++) this.#running.push(this.#locker(client++, lockNames[i % lockNames.length]!));
    for (let i = 0; i < campaigners; i++) this.#running.push(this.#campaigner(client++));
    for (let i = 0; i < observers; i++) this.#running.push(this.#observer(client++));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#running);
  }

  #pick(): ServerNode | undefined {
    const up = serving(this.#c);
    return up.length === 0 ? undefined : up[this.#rng.int(up.length)];
  }

  /** `call` on a member with `client`'s credentials and a deadline; the deadline aborts it, as a client's context. */
  async #call<T>(client: number, node: ServerNode, call: (cx: RequestContext) => Promise<T>): Promise<Outcome<T>> {
    const server = node.server;
    if (server === undefined) return { ok: false, error: new Error('member down') };
    const controller = new AbortController();
    let cx: RequestContext = { requireLeader: false, signal: controller.signal };
    if (this.#auth !== undefined) {
      const a = await this.#auth.ctx(client, node);
      if ('error' in a) {
        this.#auth.failed(client, a.error);
        return { ok: false, error: a.error };
      }
      cx = { ...a, signal: controller.signal };
    }
    const timeout = this.#c.loop.sleep(callMs).then((): Outcome<T> => {
      controller.abort();
      return { ok: false, error: new Error('client deadline exceeded') };
    });
    const done = call(cx).then((value): Outcome<T> => ({ ok: true, value }), (error: unknown): Outcome<T> => {
      this.#auth?.failed(client, error);
      return { ok: false, error };
    });
    return Promise.race([done, timeout]);
  }

  /** A session lease kept alive every second through random members until `ended()`; then revoked. */
  async #session(client: number): Promise<{ lease: bigint; end: () => void } | undefined> {
    const node = this.#pick();
    if (node === undefined) return undefined;
    const granted = await this.#call(client, node, (cx) => node.server!.leaseGrant({ ttlSeconds: sessionTtlSeconds, id: 0n }, cx));
    if (!granted.ok) return undefined;
    const lease = granted.value.id;
    let ended = false;
    void (async () => {
      while (!ended) {
        await this.#c.loop.sleep(1000);
        const at = this.#pick();
        if (ended || at === undefined) continue;
        const ttl = await this.#call(client, at, (cx) => at.server!.leaseKeepAlive(lease, cx));
        if (ttl.ok && ttl.value <= 0) return;
      }
      const at = this.#pick();
      if (at !== undefined) await this.#call(client, at, (cx) => at.server!.leaseRevoke(lease, cx));
    })();
    return { lease, end: () => void (ended = true) };
  }

  /** A contender's loop: a pause, a new session, one `turn` on a member, the session ended (its lease revoked). */
  async #contend(client: number, turn: (lease: bigint, node: ServerNode) => Promise<void>): Promise<void> {
    while (!this.#stopped) {
      await this.#c.loop.sleep(50 + this.#rng.int(300));
      const session = await this.#session(client);
      if (session === undefined) continue;
      const node = this.#pick();
      if (node !== undefined) await turn(session.lease, node);
      session.end();
    }
  }

  /** Lock, hold a moment, Unlock (through another member). */
  #locker(client: number, name: string): Promise<void> {
    return this.#contend(client, async (lease, node) => {
      const got = await this.#call(client, node, (cx) => lock(node.server!, { name: utf8(name), lease }, cx));
      if (!got.ok) return void this.counts.lockFailures++;
      this.counts.locks++;
      const key = fromUtf8(got.value.key);
      this.holds.push({ client, name, key, rev: got.value.revision, member: `n${node.id}` });
      this.#c.trace(`c${client} holds ${name} as ${key} at revision ${got.value.revision} (n${node.id})`);
      await this.#c.loop.sleep(this.#rng.int(400));
      const at = this.#pick();
      if (at !== undefined) await this.#call(client, at, (cx) => unlock(at.server!, got.value.key, cx));
    });
  }

  /** Campaign, Proclaim once, Resign. */
  #campaigner(client: number): Promise<void> {
    return this.#contend(client, async (lease, node) => {
      const value = utf8(`e${client}-${++this.#values}`);
      const won = await this.#call(client, node, (cx) => campaign(node.server!, { name: utf8(electionName), lease, value }, cx));
      if (!won.ok || node.server === undefined) return void this.counts.campaignFailures++;
      this.counts.wins++;
      const l = won.value.leader;
      // The member's revision as it answers (the revisions its waits read are at most this).
      const rev = node.server.header().revision;
      this.wins.push({ client, name: electionName, key: fromUtf8(l.key), createRev: l.rev, rev, member: `n${node.id}` });
      this.#c.trace(`c${client} leads ${electionName} as ${fromUtf8(l.key)} (created ${l.rev}) at revision ${rev} (n${node.id})`);
      await this.#c.loop.sleep(this.#rng.int(300));
      const at = this.#pick();
      if (at !== undefined && (await this.#call(client, at, (cx) => proclaim(at.server!, l, utf8(`e${client}-${++this.#values}`), cx))).ok) this.counts.proclaims++;
      const by = this.#pick();
      if (by !== undefined) await this.#call(client, by, (cx) => resign(by.server!, l, cx));
    });
  }

  async #observer(client: number): Promise<void> {
    const loop = this.#c.loop;
    while (!this.#stopped) {
      await loop.sleep(100 + this.#rng.int(300));
      const node = this.#pick();
      if (node === undefined) continue;
      const r = await this.#call(client, node, (cx) => leader(node.server!, utf8(electionName), cx));
      if (!r.ok) continue;
      this.counts.leaders++;
      this.seen.push({ client, name: electionName, key: fromUtf8(r.value.kv.key), createRev: r.value.kv.createRevision, rev: r.value.revision, member: `n${node.id}` });
    }
  }
}
