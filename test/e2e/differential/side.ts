/**
 * One server of the differential test (the real etcd or etcetera), as a client: runs an Op over raw gRPC
 * (the repo's protos, grpc-js) or over the JSON gateway, and answers with a normalised outcome (normalise.ts)
 * that is compared with the other side's. A side keeps what only it knows: its member id, the ids its leases
 * got, its tokens, its watch streams, and its last header revision and compact revision (for RevRef).
 */
import type * as grpc from '@grpc/grpc-js';
import { protoRoot, type Wire } from '../../../src/api/grpc/proto.js';
import { rawService, type RawService } from '../raw-grpc.js';
import { normalise, type SideNames } from './normalise.js';
import type { Caller, Json, LeaseRef, Op, RevRef, Service } from './ops.js';
import { WatchConn, type WatcherInfo } from './watch-conn.js';

/** Bound on any one wait for an answer; etcd catches unsynced watchers up every 100 ms. */
const waitMs = 5_000;

type JsonObj = Record<string, unknown>;

export class Side {
  readonly names: SideNames = { memberId: '', leaseHandles: new Map() };
  readonly leases = new Map<string, string>();
  readonly tokens = new Map<Caller, string>([['bogus', 'bogus.token.1']]);
  readonly streams = new Map<number, WatchConn>();
  revision = 0;
  compactRevision = 0;
  /** Watch responses seen with fragment=true (the run's log says whether fragmenting was exercised). */
  fragmentPieces = 0;
  #opened: grpc.Client[] = [];
  #services = new Map<string, RawService>();

  constructor(readonly label: string, readonly port: number) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  #service(name: Service | 'Watch'): RawService {
    let s = this.#services.get(name);
    if (s === undefined) this.#services.set(name, (s = rawService(this.port, `etcdserverpb.${name}`, this.#opened)));
    return s;
  }

  async init(): Promise<void> {
    const st = JSON.parse(JSON.stringify(await this.#service('Maintenance').Status!({}))) as { header: { memberId: string; revision: string } };
    this.names.memberId = st.header.memberId;
    this.revision = Number(st.header.revision);
  }

  /** Placeholders → this side's values. */
  resolve(v: Json): Json {
    if (Array.isArray(v)) return v.map((x) => this.resolve(x));
    if (v === null || typeof v !== 'object') return v;
    if ('$rev' in v) {
      const r = v as RevRef;
      return String(Math.max(r.atLeast ?? -Infinity, (r.$rev === 'now' ? this.revision : this.compactRevision) + r.delta));
    }
    if ('$lease' in v) return this.leases.get((v as LeaseRef).$lease) ?? '999999';
    if ('$member' in v) return this.names.memberId;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, this.resolve(x as Json)]));
  }

  #seen(res: unknown): void {
    const r = (res as { header?: { revision?: string } } | undefined)?.header?.revision;
    if (r !== undefined && Number(r) > this.revision) this.revision = Number(r);
  }

  async run(op: Op): Promise<unknown> {
    switch (op.k) {
      case 'call':
        return this.#call(op);
      case 'authenticate': {
        const out = await this.#call({ k: 'call', via: 'grpc', service: 'Auth', method: 'Authenticate', req: { name: op.user === 'root' ? 'root' : 'u', password: op.password } });
        const token = (out as { raw?: { token?: string } }).raw?.token;
        if (token !== undefined) this.tokens.set(op.user, token);
        return { ...(out as JsonObj), raw: undefined };
      }
      case 'keepAlive':
        return this.#keepAlive(String(this.resolve(op.lease)));
      case 'watch':
        return this.#watch(op.stream, this.resolve(op.create) as JsonObj);
      case 'cancelWatch': {
        const conn = this.#conn(op.stream);
        const from = conn.responses.length;
        conn.stream.write({ cancelRequest: { watchId: op.watchId } });
        const ok = await conn.until((rs) => rs.slice(from).some((r) => r.canceled === true && String(r.watchId ?? '0') === String(op.watchId)), waitMs);
        return { canceled: ok };
      }
      case 'progress': {
        const conn = this.#conn(op.stream);
        const from = conn.responses.length;
        const liveWatchers = [...conn.watchers.values()].filter((w) => !w.canceled).length;
        conn.stream.write({ progressRequest: {} });
        // A stream without watchers gets no answer from etcd 3.5 (nor from us): a short wait shows that.
        const ok = await conn.until((rs) => rs.slice(from).some((r) => String(r.watchId) === '-1'), liveWatchers === 0 ? 300 : waitMs);
        const got = conn.responses.slice(from).find((r) => String(r.watchId) === '-1');
        return { liveWatchers, answer: ok ? normalise(got, this.names) : 'none' };
      }
      case 'syncWatches':
        return this.#syncWatches();
      case 'watchLog':
        return this.#watchLog();
      case 'closeWatches':
        for (const c of this.streams.values()) c.close();
        this.streams.clear();
        return 'closed';
    }
  }

  async #call(op: Extract<Op, { k: 'call' }>): Promise<unknown> {
    const req = this.resolve(op.req) as JsonObj;
    const token = op.as === undefined || op.as === 'none' ? undefined : (this.tokens.get(op.as) ?? 'missing.token.1');
    const res = op.via === 'grpc' ? await this.#grpc(op.service, op.method, req, token) : await this.#gateway(op.service, op.method, req, token);
    const body = (res as { ok?: unknown }).ok;
    if (body !== undefined) {
      // Auth answers carry the auth store's revision in etcd 3.4: only KV and Lease answers move RevRef's 'now'.
      if (op.service === 'KV' || op.service === 'Lease') this.#seen(body);
      this.#learn(op, req, body as JsonObj);
    }
    const out = normalise(project(op.method, res), this.names) as { ok?: { leases?: { ID: string }[] } };
    // etcd 3.4 lists leases in Go map order: compared as a set, once ids are named.
    if (out.ok?.leases !== undefined) out.ok.leases = out.ok.leases.map((l) => l.ID).sort().map((ID) => ({ ID }));
    return { ...out, raw: body };
  }

  /** What the answer tells this side about its own state: lease ids, the compact revision. */
  #learn(op: Extract<Op, { k: 'call' }>, req: JsonObj, body: JsonObj): void {
    if (op.grant !== undefined && body.ID !== undefined) {
      this.leases.set(op.grant, String(body.ID));
      this.names.leaseHandles.set(String(body.ID), op.grant);
    }
    if (op.method === 'Compact') this.compactRevision = Number(req.revision);
  }

  async #grpc(service: Service, method: string, req: JsonObj, token?: string): Promise<unknown> {
    const type = protoRoot().lookupService(`etcdserverpb.${service}`).methods[method]!.resolvedRequestType!;
    try {
      const res = await this.#service(service)[method]!(type.fromObject(req) as Wire, token);
      return { ok: JSON.parse(JSON.stringify(res)) };
    } catch (err) {
      const e = err as grpc.ServiceError;
      return { code: e.code, details: e.details };
    }
  }

  async #gateway(service: Service, method: string, req: JsonObj, token?: string): Promise<unknown> {
    const path = gatewayPaths[`${service}.${method}`];
    if (path === undefined) throw new Error(`no gateway path for ${service}.${method}`);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token !== undefined) headers.authorization = token;
    const res = await fetch(`${this.baseUrl}${path}`, { method: 'POST', body: JSON.stringify(req), headers, signal: AbortSignal.timeout(waitMs) });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // a plain-text answer (404) is compared as text
    }
    return res.status === 200 ? { ok: toCamel(body) } : { status: res.status, body };
  }

  async #keepAlive(id: string): Promise<unknown> {
    const stream = this.#service('Lease').stream('LeaseKeepAlive');
    try {
      const answer = new Promise<unknown>((resolve) => {
        const t = setTimeout(() => resolve('no keep-alive answer'), waitMs);
        stream.once('data', (m: Wire) => {
          clearTimeout(t);
          resolve(JSON.parse(JSON.stringify(m)));
        });
        stream.once('error', (e: grpc.ServiceError) => {
          clearTimeout(t);
          resolve({ code: e.code, details: e.details });
        });
      });
      stream.write(protoRoot().lookupType('etcdserverpb.LeaseKeepAliveRequest').fromObject({ ID: id }));
      const res = await answer;
      this.#seen(res);
      return normalise(res, this.names);
    } finally {
      stream.on('error', () => {});
      stream.cancel();
    }
  }

  #conn(n: number): WatchConn {
    let c = this.streams.get(n);
    if (c === undefined) this.streams.set(n, (c = new WatchConn(this.#service('Watch').stream('Watch'))));
    return c;
  }

  async #watch(n: number, create: JsonObj): Promise<unknown> {
    const conn = this.#conn(n);
    const from = conn.responses.length;
    const filters = (create.filters as number[] | undefined) ?? [];
    conn.create(protoRoot().lookupType('etcdserverpb.WatchCreateRequest').fromObject(create) as unknown as JsonObj, {
      key: String(create.key ?? ''),
      rangeEnd: String(create.rangeEnd ?? ''),
      startRevision: Number(create.startRevision ?? 0),
      noPut: filters.includes(0),
      noDelete: filters.includes(1),
      belowCompaction: Number(create.startRevision ?? 0) !== 0 && Number(create.startRevision) < this.compactRevision,
    });
    const ok = await conn.until((rs) => rs.slice(from).some((r) => r.created === true || r.canceled === true), waitMs);
    const first = conn.responses.slice(from).find((r) => r.created === true || r.canceled === true);
    return ok ? normalise(first, this.names) : `no created answer (${conn.failure ?? 'timeout'})`;
  }

  /**
   * Makes every open watcher's events comparable: writes its key (a put, then a delete for a watcher that
   * filters puts) past its start revision, and waits until each has seen that write or was canceled. Both sides
   * write the same keys in the same order, so their revisions stay equal while they agree.
   */
  async #syncWatches(): Promise<unknown> {
    const kv = this.#service('KV');
    const writes: { key: Buffer; revision: number; put: boolean }[] = [];
    const revisionOf = (res: unknown): number => Number((res as { header: { revision: { toString(): string } } }).header.revision.toString());
    const live: [WatchConn, WatcherInfo][] = [];
    for (const conn of this.streams.values()) {
      for (const w of conn.watchers.values()) {
        // A watcher that starts below the compaction is canceled, by etcd from its 100 ms catch-up loop: wait
        // for that rather than write for it (whether a write came first would depend on the loop's timing).
        if (w.belowCompaction) await conn.until(() => w.canceled, waitMs);
        if (w.canceled || (w.noPut && w.noDelete)) continue;
        live.push([conn, w]);
        const key = Buffer.from(w.key, 'base64');
        do {
          writes.push({ key, put: true, revision: revisionOf(await kv.Put!({ key, value: Buffer.from('sync') })) });
        } while (writes.at(-1)!.revision < w.startRevision);
        if (w.noPut) writes.push({ key, put: false, revision: revisionOf(await kv.DeleteRange!({ key })) });
        this.revision = Math.max(this.revision, writes.at(-1)!.revision);
      }
    }
    // Each watcher waits for the last of these writes it sees, so no event of them is still on its way.
    const late: string[] = [];
    for (const [conn, w] of live) {
      const target = Math.max(0, ...writes.filter((x) => x.revision >= w.startRevision && sees(w, x.key, x.put)).map((x) => x.revision));
      if (!(await conn.until(() => w.canceled || w.seen >= target, waitMs))) late.push(`${w.id}@${target}`);
    }
    return { syncedAt: this.revision, late };
  }

  /**
   * Per stream and watch id: its control answers (created, canceled with compact revision and reason) and its
   * events, flattened. How events are cut into responses (and their header revisions) depends on when etcd's
   * 100 ms catch-up loop runs, so only their order and content are compared.
   */
  #watchLog(): unknown {
    const out: Record<string, unknown> = {};
    for (const [n, conn] of this.streams) {
      const perId: Record<string, { control: unknown[]; events: unknown[]; fragments?: number }> = {};
      for (const r of conn.responses) {
        const id = String(r.watchId ?? '0');
        if (id === '-1') continue;
        const slot = (perId[id] ??= { control: [], events: [] });
        if (r.created === true || r.canceled === true) {
          const { header, events, ...rest } = r as JsonObj & { header?: { revision?: string } };
          slot.control.push(normalise({ ...rest, ...(r.created === true ? { revision: header?.revision } : {}) }, this.names));
        }
        for (const ev of (r.events as unknown[] | undefined) ?? []) slot.events.push(normalise(ev, this.names));
        // How many pieces carried fragment=true: the same cut on both servers (etcd cuts at its request limit).
        if (r.fragment === true) {
          slot.fragments = (slot.fragments ?? 0) + 1;
          this.fragmentPieces++;
        }
      }
      out[`stream${n}`] = perId;
    }
    return out;
  }

  close(): void {
    for (const c of this.streams.values()) c.close();
    this.streams.clear();
    for (const c of this.#opened) c.close();
  }
}

/** Fields of an answer that mean the same on both servers (Status: not the version, sizes or raft indexes). */
function project(method: string, res: unknown): unknown {
  const body = (res as { ok?: JsonObj }).ok;
  if (body === undefined) return res;
  if (method === 'Status') {
    const { header, leader, errors, isLearner } = body;
    return { ok: { header, leader, errors, isLearner } };
  }
  if (method === 'LeaseTimeToLive') {
    const out = { ...body };
    // etcd 3.4 lists a lease's keys in Go map order.
    if (Array.isArray(body.keys)) out.keys = [...body.keys].sort();
    // Seconds left depend on when each server got the call: within 2 s of the granted TTL counts as "fresh".
    const [ttl, granted] = [Number(body.TTL ?? 0), Number(body.grantedTTL ?? 0)];
    if (ttl > 0 && ttl <= granted && ttl >= granted - 2) out.TTL = 'fresh';
    return { ok: out };
  }
  return res;
}

/** The gateway answers with the .proto's field names; gRPC answers (toJSON) with camelCase ones. */
function toCamel(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(toCamel);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()), toCamel(x)]));
}

const gatewayPaths: Record<string, string> = {
  'KV.Range': '/v3/kv/range',
  'KV.Put': '/v3/kv/put',
  'KV.DeleteRange': '/v3/kv/deleterange',
  'KV.Txn': '/v3/kv/txn',
  'KV.Compact': '/v3/kv/compaction',
  'Lease.LeaseGrant': '/v3/lease/grant',
  'Lease.LeaseRevoke': '/v3/lease/revoke',
  'Lease.LeaseTimeToLive': '/v3/lease/timetolive',
  'Lease.LeaseLeases': '/v3/lease/leases',
  'Maintenance.Status': '/v3/maintenance/status',
  'Maintenance.HashKV': '/v3/maintenance/hashkv',
  'Maintenance.Alarm': '/v3/maintenance/alarm',
  'Cluster.MemberList': '/v3/cluster/member/list',
  'Auth.UserGet': '/v3/auth/user/get',
  'Auth.RoleGet': '/v3/auth/role/get',
};

/** Whether watcher `w` gets an event for a put (or delete) of `key`: its range, its filters. */
function sees(w: WatcherInfo, key: Buffer, put: boolean): boolean {
  if (put ? w.noPut : w.noDelete) return false;
  const from = Buffer.from(w.key, 'base64');
  const end = Buffer.from(w.rangeEnd, 'base64');
  if (end.length === 0) return key.equals(from);
  if (end.length === 1 && end[0] === 0) return Buffer.compare(key, from) >= 0;
  return Buffer.compare(key, from) >= 0 && Buffer.compare(key, end) < 0;
}
