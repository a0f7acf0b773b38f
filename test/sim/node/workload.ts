/**
 * Clients and watchers of the simulated production cluster, recording a history for the chaos checkers
 * (test/chaos/check.ts: L1 linearizability per key, revision order, L4 watch guarantees). They call
 * EtcdServer's EtcdApi directly — the API the gRPC services and the embedded client call — on a member
 * picked by the seed, as a client with several endpoints would.
 *
 * - Clients run one operation at a time: kube-apiserver's guarded write Txn(mod_revision(key) == seen →
 *   Put | Delete, else Range) and linearizable gets, over a few keys, with unique values. A call gets a
 *   deadline (a client's request timeout); one that times out or fails has an unknown outcome.
 * - A lease keeper grants short leases, attaches a key to each (kube's events), renews it for a while through
 *   random members and then lets it expire; the checker requires that no key is deleted while an
 *   acknowledged renewal still holds its lease.
 * - Watchers watch every key from revision 1 with prev_kv; when their member dies or is cut off they resume
 *   on another one from the revision after the last one they saw (a new session that resumes the old).
 */
import { utf8, fromUtf8 } from '../../../src/base/bytes.js';
import type { Prng } from '../../../src/base/prng.js';
import type { RequestContext, WatchStream } from '../../../src/node/server-api.js';
import { CompareResult, CompareTarget, SortOrder, SortTarget, type KeyValue, type RangeRequest } from '../../../src/mvcc/types.js';
import { watchCreateRequest, type WatchResponse } from '../../../src/mvcc/watch-types.js';
import { Recorder, type Kv, type OpInput, type OpOutput, type WatchSession } from '../../chaos/history.js';
import { lastObserved } from '../../chaos/reference-log.js';
import type { ServerCluster } from './server-cluster.js';
import type { ServerNode } from './server-node.js';
import type { SimAuth } from './sim-auth.js';

/** A client's deadline for one call (etcd's request timeout is 7 s with a 1 s election timeout). */
export const clientTimeoutMs = 10_000;
const keys = ['a', 'b', 'c', 'd'];
/** Short leases, so some expire in every seed (the minimum is 1.5 election timeouts: 2 s). */
const leaseTtlSeconds = 3;
const empty = new Uint8Array(0);

function ctx(): RequestContext {
  return { requireLeader: false, signal: new AbortController().signal };
}

function rangeOf(key: string): RangeRequest {
  return {
    key: utf8(key), rangeEnd: empty, limit: 0, revision: 0, sortOrder: SortOrder.None, sortTarget: SortTarget.Key,
    serializable: false, keysOnly: false, countOnly: false, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0,
  };
}

export function kvOf(kv: KeyValue): Kv {
  return { key: fromUtf8(kv.key), value: fromUtf8(kv.value), modRev: kv.modRevision, createRev: kv.createRevision, version: kv.version, lease: kv.lease.toString() };
}

/** The members a client may use: serving, and not learners. */
export function serving(c: ServerCluster): ServerNode[] {
  return c.nodes.filter((n) => n.server !== undefined && !n.server.isLearner());
}

export class Workload {
  readonly recorder = new Recorder();
  readonly #c: ServerCluster;
  readonly #rng: Prng;
  #stopped = false;
  #watchersStopped = false;
  #values = 0;
  readonly #running: Promise<void>[] = [];
  readonly #watching: Promise<void>[] = [];
  readonly #watchers: Watcher[] = [];
  /** In auth seeds every call is alice's, with her token (sim-auth.ts). */
  readonly #auth: SimAuth | undefined;

  constructor(cluster: ServerCluster, rng: Prng, auth?: SimAuth) {
    this.#c = cluster;
    this.#rng = rng;
    this.#auth = auth;
  }

  /** `call` with `client`'s context on `node`: without auth at once, with auth after authenticating if need be. */
  #as<T>(client: number, node: ServerNode, call: (cx: RequestContext) => Promise<T>): Promise<T> {
    const auth = this.#auth;
    if (auth === undefined) return call(ctx());
    return auth.ctx(client, node)
      .then((r) => ('error' in r ? Promise.reject(r.error) : call(r)))
      .catch((error: unknown) => {
        auth.failed(client, error);
        throw error;
      });
  }

  start(clients: number, watchers: number): void {
    for (let i = 0; i < clients; i++) this.#running.push(this.#client(i));
    this.#running.push(this.#leaseKeeper(clients));
    for (let i = 0; i < watchers; i++) {
      const w = new Watcher(this.#c, this.recorder, this.#rng.fork(), i, this.#auth);
      this.#watchers.push(w);
      this.#watching.push(w.run(() => this.#watchersStopped));
    }
  }

  /** Clients finish their current call (bounded by its deadline) and stop; watchers go on. */
  async stopClients(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#running);
  }

  /** Watchers close their sessions (at their next check). */
  async stopWatchers(): Promise<void> {
    this.#watchersStopped = true;
    await Promise.all(this.#watching);
  }

  /** Every watcher delivered everything through `revision` (asks for progress notifications meanwhile). */
  watchersCaughtUp(revision: number): boolean {
    return this.#watchers.every((w) => w.caughtUp(revision));
  }

  /**
   * A random serving member (a client's endpoint list); undefined while none serves. A learner is no endpoint
   * (etcd's interceptors refuse a learner most calls; a replacement member is one until promoted).
   */
  pick(): ServerNode | undefined {
    const up = serving(this.#c);
    return up.length === 0 ? undefined : up[this.#rng.int(up.length)];
  }

  async #client(client: number): Promise<void> {
    const seen = new Map<string, number>();
    const loop = this.#c.loop;
    while (!this.#stopped) {
      await loop.sleep(this.#rng.int(40));
      const node = this.pick();
      if (node === undefined) {
        await loop.sleep(100);
        continue;
      }
      const key = keys[this.#rng.int(keys.length)]!;
      const x = this.#rng.next();
      const mod = seen.get(key) ?? 0;
      let input: OpInput;
      if (x < 0.4) input = { type: 'txn', key, cmpModRev: mod, action: 'put', value: `v${++this.#values}` };
      else if (x < 0.5) input = { type: 'txn', key, cmpModRev: mod, action: mod === 0 ? 'put' : 'delete', value: `v${++this.#values}` };
      else input = { type: 'get', key };
      const op = this.recorder.invoke(client, input);
      const out = await this.#call(node, input, client);
      this.#c.trace(`c${client} #${op.id} on n${node.id}: ${JSON.stringify(input)} ⇒ ${JSON.stringify(out)}`);
      if (out.type === 'error') {
        this.recorder.fail(op, new Error(out.message));
        continue;
      }
      this.recorder.complete(op, out);
      const kv = out.type === 'txn' ? out.kv : out.type === 'get' ? out.kv : undefined;
      if (out.type === 'txn' && out.succeeded) seen.set(key, input.type === 'txn' && input.action === 'put' ? out.rev : 0);
      else if (kv !== undefined) seen.set(key, kv === null ? 0 : kv.modRev);
    }
  }

  /** Grant, attach a key, renew for a while, let it expire; again. */
  async #leaseKeeper(client: number): Promise<void> {
    const loop = this.#c.loop;
    while (!this.#stopped) {
      await loop.sleep(100 + this.#rng.int(400));
      const node = this.pick();
      if (node === undefined) continue;
      const sentMs = loop.nowMs;
      const grant = this.recorder.invoke(client, { type: 'leaseGrant', ttlSeconds: leaseTtlSeconds });
      const server = node.server!;
      const granted = await this.#deadline(this.#as(client, node, (cx) => server.leaseGrant({ ttlSeconds: leaseTtlSeconds, id: 0n }, cx)));
      if (!granted.ok) {
        this.recorder.fail(grant, granted.error);
        continue;
      }
      const id = granted.value.id;
      // The gRPC layer's header: the member's store revision when the answer leaves.
      this.recorder.complete(grant, { type: 'lease', rev: server.header().revision, id: id.toString() });
      const key = `lease/${id.toString(16)}`;
      const kept = { id: id.toString(), key, ttlSeconds: granted.value.ttlSeconds, renewals: [{ sentMs, ttlSeconds: granted.value.ttlSeconds }] };
      this.recorder.leases.push(kept);
      const value = `v${++this.#values}`;
      const put = this.recorder.invoke(client, { type: 'leasePut', key, value, lease: id.toString() });
      const putNode = this.pick() ?? node;
      const req = { key: utf8(key), value: utf8(value), lease: id, prevKv: false, ignoreValue: false, ignoreLease: false };
      const putServer = putNode.server;
      const r = putServer === undefined ? undefined : await this.#deadline(this.#as(client, putNode, (cx) => putServer.put(req, cx)));
      if (r === undefined || !r.ok) {
        this.recorder.fail(put, r?.error ?? new Error('no member'));
        continue;
      }
      this.recorder.complete(put, { type: 'put', rev: r.value.revision });
      const renewUntil = loop.nowMs + this.#rng.int(8000);
      while (!this.#stopped && loop.nowMs < renewUntil) {
        await loop.sleep(700 + this.#rng.int(300));
        const at = this.pick();
        if (at === undefined) continue;
        const renewSentMs = loop.nowMs;
        const atServer = at.server!;
        const ttl = await this.#deadline(this.#as(client, at, (cx) => atServer.leaseKeepAlive(id, cx)));
        if (ttl.ok && ttl.value > 0) kept.renewals.push({ sentMs: renewSentMs, ttlSeconds: ttl.value });
        this.#c.trace(`lease ${id.toString(16)} keepalive sent at ${renewSentMs} via n${at.id} (leader n${at.server?.leaderId ?? '?'}): ${ttl.ok ? ttl.value : String(ttl.error)}`);
      }
    }
  }

  /** A call with the client's deadline; a member that crashes mid-call never answers. */
  async #deadline<T>(call: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
    const timeout = this.#c.loop.sleep(clientTimeoutMs).then(() => ({ ok: false as const, error: new Error('client deadline exceeded') }));
    return Promise.race([call.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error })), timeout]);
  }

  /** One call with the client's deadline; a member that crashes mid-call never answers. */
  async #call(node: ServerNode, input: OpInput, client: number): Promise<OpOutput> {
    const server = node.server!;
    const call = async (): Promise<OpOutput> => {
      if (input.type === 'get') {
        const r = await this.#as(client, node, (cx) => server.range(rangeOf(input.key), cx));
        return { type: 'get', rev: r.revision, kv: r.kvs[0] !== undefined ? kvOf(r.kvs[0]) : null };
      }
      if (input.type !== 'txn') throw new Error(`unsupported ${input.type}`);
      const k = utf8(input.key);
      const success = input.action === 'put'
        ? [{ put: { key: k, value: utf8(input.value), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false } }]
        : [{ deleteRange: { key: k, rangeEnd: empty, prevKv: false } }];
      const r = await this.#as(client, node, (cx) => server.txn({
        compare: [{ result: CompareResult.Equal, target: CompareTarget.Mod, key: k, rangeEnd: empty, modRevision: input.cmpModRev }],
        success,
        failure: [{ range: rangeOf(input.key) }],
      }, cx));
      if (r.succeeded) return { type: 'txn', succeeded: true, rev: r.revision };
      const first = r.responses[0];
      const kvs = first !== undefined && 'range' in first ? first.range.kvs : [];
      return { type: 'txn', succeeded: false, rev: r.revision, kv: kvs[0] !== undefined ? kvOf(kvs[0]) : null };
    };
    const deadline = this.#c.loop.sleep(clientTimeoutMs).then((): OpOutput => ({ type: 'error', message: 'client deadline exceeded' }));
    return Promise.race([call().catch((error: unknown): OpOutput => ({ type: 'error', message: error instanceof Error ? error.message : String(error) })), deadline]);
  }
}

/** One watcher: a session per member it watches on, each resuming where the last one's delivery ended. */
class Watcher {
  readonly #c: ServerCluster;
  readonly #rec: Recorder;
  readonly #rng: Prng;
  readonly #client: number;
  #session: WatchSession | undefined;
  #node: ServerNode | undefined;
  #incarnation = 0;
  #stream: WatchStream | undefined;
  readonly #auth: SimAuth | undefined;

  constructor(cluster: ServerCluster, recorder: Recorder, rng: Prng, index: number, auth?: SimAuth) {
    this.#c = cluster;
    this.#rec = recorder;
    this.#rng = rng;
    this.#client = 1000 + index;
    this.#auth = auth;
  }

  caughtUp(revision: number): boolean {
    const s = this.#session;
    if (s === undefined || s.end !== undefined) return false;
    if (lastObserved(s) >= revision) return true;
    this.#stream?.requestProgress();
    return false;
  }

  async run(stopped: () => boolean): Promise<void> {
    const loop = this.#c.loop;
    while (!stopped()) {
      await loop.sleep(50 + this.#rng.int(100));
      const node = this.#node;
      const alive = node !== undefined && node.server !== undefined && node.incarnation === this.#incarnation;
      if (alive && this.#session?.end === undefined) continue;
      this.#close(alive ? 'closed' : 'error');
      if (this.#auth === undefined) this.#open(ctx());
      else await this.#openAuthenticated(this.#auth);
    }
    this.#close('closed');
  }

  #close(end: NonNullable<WatchSession['end']>): void {
    const s = this.#session;
    if (s !== undefined && s.end === undefined) s.end = end;
    this.#stream?.close();
    this.#stream = undefined;
  }

  /** In auth seeds: a fresh token from the member the watch opens on (simple tokens are per member). */
  async #openAuthenticated(auth: SimAuth): Promise<void> {
    const up = serving(this.#c);
    if (up.length === 0) return;
    const node = up[this.#rng.int(up.length)]!;
    auth.forget(this.#client);
    const cx = await auth.ctx(this.#client, node);
    if ('error' in cx) return auth.failed(this.#client, cx.error);
    if (node.server !== undefined) this.#open(cx, node);
  }

  #open(cx: RequestContext, chosen?: ServerNode): void {
    const up = serving(this.#c);
    if (up.length === 0) return;
    const node = chosen ?? up[this.#rng.int(up.length)]!;
    const prior = this.#session;
    const startRev = prior === undefined ? 1 : lastObserved(prior) + 1;
    const s = this.#rec.openWatch({
      client: this.#client, member: `n${node.id}`, key: '\0', rangeEnd: '\0', startRev, prevKv: true,
      ...(prior !== undefined ? { resumes: prior.id } : {}),
    });
    this.#session = s;
    this.#node = node;
    this.#incarnation = node.incarnation;
    const stream = node.server!.openWatchStream({ send: (r) => this.#receive(s, r) }, cx);
    this.#stream = stream;
    stream.create(watchCreateRequest({ key: utf8('\0'), rangeEnd: utf8('\0'), startRevision: startRev, prevKv: true }));
  }

  #receive(s: WatchSession, r: WatchResponse): boolean {
    if (s.end !== undefined) return true;
    if (r.canceled) {
      if (r.compactRevision > 0) s.compactRev = r.compactRevision;
      s.end = 'canceled';
      return true;
    }
    if (r.created) return true;
    s.responses.push({
      at: this.#rec.now(),
      atMs: this.#c.loop.nowMs,
      headerRev: r.revision,
      events: r.events.map((e) => ({ type: e.type === 0 ? 'put' : 'delete', kv: kvOf(e.kv), ...(e.prevKv !== undefined ? { prevKv: kvOf(e.prevKv) } : {}) })),
      progress: r.events.length === 0,
      fragment: r.fragment,
    });
    return true;
  }
}
