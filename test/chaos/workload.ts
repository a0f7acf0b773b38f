/**
 * A kube-apiserver-shaped KV workload, through the etcd3 client's raw stubs so every request is exactly
 * kube's: creates as Txn(mod_revision == 0 → Put, else Range), updates as Txn(mod_revision == seen → Put,
 * else Range), deletes as Txn(mod_revision == seen → DeleteRange, else Range), gets, paginated lists pinned
 * to the first page's revision, count_only ranges, and events: puts attached to a short lease. Each client
 * runs one request at a time and records it in the history; values are unique (`c<client>-<seq>`), so any
 * value seen anywhere names the write that made it.
 */
import type { Etcd3, ITxnResponse, IRangeResponse } from 'etcd3';
import type { Prng } from '../../src/base/index.js';
import { prefixEnd, type Kv, type Op, type OpInput, type OpOutput, type Recorder } from './history.js';
import { bytes, deadline, toKv } from './wire.js';

export const podPrefix = '/registry/pods/';
export const eventPrefix = '/registry/events/';
export const registryPrefix = '/registry/';

export interface KvClientOptions {
  id: number;
  etcd: Etcd3;
  rec: Recorder;
  rng: Prng;
  keys: number;
  timeoutMs: number;
}

export class KvClient {
  readonly o: KvClientOptions;
  /** The mod revision this client last saw per key (0: absent), as kube's watch cache would know it. */
  readonly #seen = new Map<string, number>();
  #seq = 0;
  #lease: { id: string; until: number } | undefined;
  done = 0;
  failed = 0;

  constructor(o: KvClientOptions) {
    this.o = o;
  }

  async run(stopped: () => boolean): Promise<void> {
    while (!stopped()) {
      const ok = await this.step();
      if (!ok) await new Promise((r) => setTimeout(r, 50)); // the member is down or has no leader: back off a little
    }
  }

  /** One randomly chosen request; false when it failed. */
  async step(): Promise<boolean> {
    const op = await this.#pick();
    return op.output !== undefined && op.output.type !== 'error';
  }

  #pick(): Promise<Op> {
    const x = this.o.rng.next();
    const key = `${podPrefix}p${this.o.rng.int(this.o.keys)}`;
    const seen = this.#seen.get(key);
    if (x < 0.35) return seen === undefined || seen === 0 ? this.#txn(key, 0, 'put') : this.#txn(key, seen, 'put');
    if (x < 0.45) return seen ? this.#txn(key, seen, 'delete') : this.#txn(key, 0, 'put');
    if (x < 0.7) return this.#get(key);
    if (x < 0.8) return this.list(podPrefix, 7);
    if (x < 0.85) return this.#count(podPrefix);
    return this.#event();
  }

  async #record(input: OpInput, call: () => Promise<OpOutput>): Promise<Op> {
    const op = this.o.rec.invoke(this.o.id, input);
    try {
      this.o.rec.complete(op, await call());
      this.done++;
    } catch (e) {
      this.o.rec.fail(op, e);
      this.failed++;
    }
    return op;
  }

  #value(): string {
    return `c${this.o.id}-${++this.#seq}`;
  }

  #txn(key: string, cmpModRev: number, action: 'put' | 'delete'): Promise<Op> {
    const value = action === 'put' ? this.#value() : '';
    const k = bytes(key);
    const success = action === 'put' ? [{ request_put: { key: k, value: bytes(value) } }] : [{ request_delete_range: { key: k } }];
    return this.#record({ type: 'txn', key, cmpModRev, action, value }, async () => {
      const r: ITxnResponse = await this.o.etcd.kv.txn(
        { compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: String(cmpModRev) }], success, failure: [{ request_range: { key: k } }] },
        deadline(this.o.timeoutMs),
      );
      const rev = Number(r.header.revision);
      if (r.succeeded) {
        this.#seen.set(key, action === 'put' ? rev : 0);
        return { type: 'txn', succeeded: true, rev };
      }
      const kvs = r.responses[0]?.response_range?.kvs ?? [];
      const kv = kvs[0] ? toKv(kvs[0]) : null;
      this.#seen.set(key, kv?.modRev ?? 0);
      return { type: 'txn', succeeded: false, rev, kv };
    });
  }

  #get(key: string): Promise<Op> {
    return this.#record({ type: 'get', key }, async () => {
      const r = await this.o.etcd.kv.range({ key: bytes(key) }, deadline(this.o.timeoutMs));
      const kv = r.kvs[0] ? toKv(r.kvs[0]) : null;
      this.#seen.set(key, kv?.modRev ?? 0);
      return { type: 'get', rev: Number(r.header.revision), kv };
    });
  }

  /** A paginated list: limit per page, continue from last key + "\0", every page pinned to `atRev` or the first page's revision. */
  list(prefix: string, limit: number, atRev = 0): Promise<Op> {
    return this.#record({ type: 'list', prefix, limit }, async () => {
      const kvs: Kv[] = [];
      const pageRevs: number[] = [];
      let from = prefix;
      let rev = atRev;
      let count = -1;
      for (let page = 0; page < 1000; page++) {
        const r: IRangeResponse = await this.o.etcd.kv.range(
          { key: bytes(from), range_end: bytes(prefixEnd(prefix)), limit: String(limit), revision: String(rev) },
          deadline(this.o.timeoutMs),
        );
        pageRevs.push(Number(r.header.revision));
        if (rev === 0) rev = Number(r.header.revision);
        if (count < 0) count = Number(r.count);
        kvs.push(...r.kvs.map(toKv));
        if (!r.more || r.kvs.length === 0) return { type: 'list', rev, kvs, count, pages: page + 1, pageRevs };
        from = kvs[kvs.length - 1]!.key + '\0';
      }
      throw new Error('list did not end after 1000 pages');
    });
  }

  #count(prefix: string): Promise<Op> {
    return this.#record({ type: 'count', prefix }, async () => {
      const r = await this.o.etcd.kv.range({ key: bytes(prefix), range_end: bytes(prefixEnd(prefix)), count_only: true }, deadline(this.o.timeoutMs));
      return { type: 'count', rev: Number(r.header.revision), count: Number(r.count) };
    });
  }

  /** kube's events: a put attached to a lease shared for a few seconds, so expiry deletes keys now and then. */
  async #event(): Promise<Op> {
    if (this.#lease === undefined || Date.now() > this.#lease.until) {
      const ttlSeconds = 2;
      const grant = await this.#record({ type: 'leaseGrant', ttlSeconds }, async () => {
        const r = await this.o.etcd.leaseClient.leaseGrant({ TTL: ttlSeconds }, deadline(this.o.timeoutMs));
        this.#lease = { id: String(r.ID), until: Date.now() + 1000 };
        return { type: 'lease', rev: Number(r.header.revision), id: String(r.ID) };
      });
      if (grant.output?.type !== 'lease') return grant;
    }
    const lease = this.#lease!.id;
    const key = `${eventPrefix}e-${this.o.id}-${this.#seq + 1}`;
    const value = this.#value();
    return this.#record({ type: 'leasePut', key, value, lease }, async () => {
      const r = await this.o.etcd.kv.put({ key: bytes(key), value: bytes(value), lease }, deadline(this.o.timeoutMs));
      return { type: 'put', rev: Number(r.header.revision) };
    });
  }
}

/**
 * kube-apiserver's compaction loop, faster: every interval, Txn(version(compact_rev_key) == last seen →
 * Put(compact_rev_key, current revision), else Range), then Compact to the revision stored one interval
 * before, so the history kept is always at least one interval long.
 */
export async function compactionLoop(o: { etcd: () => Etcd3; rec: Recorder; client: number; intervalMs: number; stopped: () => boolean; log: (l: string) => void }): Promise<void> {
  const key = bytes('compact_rev_key');
  let version = 0;
  let previous = 0;
  let n = 0;
  while (!o.stopped()) {
    await new Promise((r) => setTimeout(r, o.intervalMs));
    if (o.stopped()) return;
    try {
      const etcd = o.etcd();
      const cur = Number((await etcd.kv.range({ key }, deadline(2000))).header.revision);
      const r = await etcd.kv.txn(
        { compare: [{ key, target: 'Version', result: 'Equal', version: String(version) }], success: [{ request_put: { key, value: bytes(`compact-${cur}-${++n}`) } }], failure: [{ request_range: { key } }] },
        deadline(2000),
      );
      if (!r.succeeded) {
        version = Number(r.responses[0]?.response_range?.kvs[0]?.version ?? 0);
        continue;
      }
      version++;
      if (previous > 0) {
        const op = o.rec.invoke(o.client, { type: 'compact', revision: previous });
        try {
          const c = await etcd.kv.compact({ revision: String(previous) }, deadline(5000));
          o.rec.complete(op, { type: 'compact', rev: Number(c.header.revision) });
        } catch (e) {
          o.rec.fail(op, e);
        }
      }
      previous = cur;
    } catch (e) {
      o.log(`compaction loop: ${String(e)}`);
    }
  }
}
