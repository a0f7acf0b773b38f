/**
 * Seeded sequences of client operations for the server-level differential test. One sequence works under its
 * own key prefix (`q<seed>/`), so sequences share one etcd and one etcetera; it ends by comparing every watch
 * stream's events and the whole store's HashKV, then closing its streams, revoking its leases and deleting its
 * keys. Requests name revisions relative to the side's current or compact revision (ops.ts), so a replayed seed
 * exercises the same cases on fresh servers.
 */
import { Prng } from '../../../src/base/prng.js';
import { Draws } from '../../mvcc/draws.js';
import { b64, lease, rev, type Caller, type Json, type Op, type Req, type Service } from './ops.js';

/** Key suffixes under the sequence's prefix: a nested path, a high byte, a zero byte. */
const keySuffixes = ['a', 'b', 'b/c', 'b/d', 'c', 'x', 'z\xff', 'a\x00'];

export interface Sequence {
  seed: number;
  prefix: string;
  kind: 'kv' | 'auth';
  ops: Op[];
}

export function generate(seed: number): Sequence {
  const g = new G(seed);
  // Auth sequences hash passwords on both sides (bcrypt on etcd's): one in twenty.
  const kind = g.int(20) === 0 ? 'auth' : 'kv';
  if (kind === 'auth') g.authSequence();
  else g.kvSequence();
  g.finish();
  return { seed, prefix: g.prefix, kind, ops: g.ops };
}

class G extends Draws {
  readonly prefix: string;
  readonly ops: Op[] = [];
  readonly leases: string[] = [];
  readonly chosenIds = new Set<string>();
  streams = 0;
  watches = new Map<number, number>();

  constructor(readonly seed: number) {
    super(new Prng(seed));
    this.prefix = `q${seed}/`;
  }

  key(): string {
    return b64(this.prefix + this.pick(keySuffixes));
  }
  /** A range end after `key` (or none, or "from key" \0, or the whole prefix). */
  keyRange(): Req {
    const key = this.pick(keySuffixes);
    switch (this.int(5)) {
      case 0:
      case 1:
        return { key: b64(this.prefix + key) };
      case 2:
        return { key: b64(this.prefix), rangeEnd: b64(this.prefix.slice(0, -1) + '0') };
      case 3:
        return { key: b64(this.prefix + key), rangeEnd: b64(this.prefix + key + '\xff') };
      default: {
        const other = this.pick(keySuffixes);
        const [lo, hi] = key < other ? [key, other] : [other, key];
        return { key: b64(this.prefix + lo), rangeEnd: b64(this.prefix + hi + (this.chance(0.5) ? '\x00' : '')) };
      }
    }
  }
  /** A read revision: current (0), recent, at or around the compaction, or in the future. */
  readRev(): Json {
    switch (this.int(6)) {
      case 0: case 1: return 0;
      case 2: return rev('now', -this.int(4));
      case 3: return rev('compact', this.int(3) - 1);
      case 4: return rev('now', 1 + this.int(2));
      default: return rev('now', 0);
    }
  }
  value(): string {
    return b64(this.chance(0.1) ? '' : `v${this.int(100)}`);
  }
  leaseRef(): Json {
    return this.leases.length > 0 && this.chance(0.85) ? lease(this.pick(this.leases)) : lease('never-granted');
  }
  /**
   * A lease to attach to a key: only one granted with a chosen id, since a key's lease id is part of what
   * HashKV hashes and ids granted without one differ between the servers.
   */
  attachLeaseRef(): Json {
    const chosen = this.leases.filter((h) => this.chosenIds.has(h));
    return chosen.length > 0 && this.chance(0.85) ? lease(this.pick(chosen)) : lease('never-granted');
  }

  call(service: Service, method: string, req: Req, extra: { as?: Caller; grant?: string; via?: 'grpc' | 'gateway' } = {}): void {
    this.ops.push({ k: 'call', via: extra.via ?? (this.chance(0.25) ? 'gateway' : 'grpc'), service, method, req, ...(extra.as ? { as: extra.as } : {}), ...(extra.grant ? { grant: extra.grant } : {}) });
  }

  put(): Req {
    const req: Req = { key: this.key(), value: this.value() };
    if (this.chance(0.4)) req.prevKv = true;
    if (this.chance(0.25)) req.lease = this.attachLeaseRef();
    if (this.chance(0.08)) req.ignoreValue = true;
    if (this.chance(0.08)) req.ignoreLease = true;
    if (this.chance(0.02)) req.key = '';
    return req;
  }
  range(): Req {
    const req: Req = { ...this.keyRange() };
    if (this.chance(0.3)) req.limit = String(this.int(4));
    if (this.chance(0.4)) req.revision = this.readRev();
    if (this.chance(0.3)) {
      req.sortOrder = this.int(3);
      req.sortTarget = this.int(5);
    }
    if (this.chance(0.15)) req.countOnly = true;
    if (this.chance(0.15)) req.keysOnly = true;
    if (this.chance(0.1)) req.serializable = true;
    for (const f of ['minModRevision', 'maxModRevision', 'minCreateRevision', 'maxCreateRevision']) {
      if (this.chance(0.08)) req[f] = rev('now', -this.int(6));
    }
    return req;
  }
  deleteRange(): Req {
    return { ...this.keyRange(), ...(this.chance(0.5) ? { prevKv: true } : {}) };
  }
  compare(): Req {
    const target = this.int(5);
    const c: Req = { key: this.key(), result: this.int(4), target };
    if (this.chance(0.15)) c.rangeEnd = b64(this.prefix + '\xff');
    if (target === 0) c.version = String(this.int(4));
    if (target === 1) c.createRevision = rev('now', -this.int(5));
    if (target === 2) c.modRevision = rev('now', -this.int(5));
    if (target === 3) c.value = this.value();
    if (target === 4) c.lease = this.chance(0.5) ? this.leaseRef() : '0';
    return c;
  }
  requestOp(depth: number): Req {
    switch (this.int(depth < 2 ? 4 : 3)) {
      case 0: return { requestRange: this.range() };
      case 1: return { requestPut: this.put() };
      case 2: return { requestDeleteRange: this.deleteRange() };
      default: return { requestTxn: this.txn(depth + 1) };
    }
  }
  txn(depth = 0): Req {
    const ops = (): Json[] => Array.from({ length: this.int(4) }, () => this.requestOp(depth));
    return { compare: Array.from({ length: this.int(3) }, () => this.compare()), success: ops(), failure: ops() };
  }

  /** A watch on one of three streams, from a start revision below, at or above the compaction, or ahead. */
  watch(): void {
    const stream = this.int(3);
    const create: Req = { ...this.keyRange() };
    if (create.rangeEnd === undefined && this.chance(0.2)) create.rangeEnd = b64('\x00');
    switch (this.int(6)) {
      case 0: create.startRevision = rev('compact', this.int(3) - 1, 1); break;
      case 1: create.startRevision = rev('now', -this.int(4)); break;
      case 2: create.startRevision = rev('now', 1 + this.int(3)); break;
      default: break;
    }
    if (this.chance(0.4)) create.prevKv = true;
    if (this.chance(0.25)) create.filters = [this.int(2)];
    if (this.chance(0.1)) create.fragment = true;
    const n = this.watches.get(stream) ?? 0;
    if (this.chance(0.1)) create.watchId = String(this.chance(0.7) ? 100 + n : 0);
    this.watches.set(stream, n + 1);
    this.ops.push({ k: 'watch', stream, create });
    // Catch the new watcher up before anything else happens, so etcd's 100 ms catch-up loop cannot race a
    // compaction or merge later writes into its first response.
    this.ops.push({ k: 'syncWatches' });
  }

  step(): void {
    const r = this.int(100);
    if (r < 20) return this.call('KV', 'Put', this.put());
    if (r < 34) return this.call('KV', 'Range', this.range());
    if (r < 40) return this.call('KV', 'DeleteRange', this.deleteRange());
    if (r < 52) return this.call('KV', 'Txn', this.txn());
    if (r < 58) {
      const handle = `L${this.leases.length}`;
      const req: Req = { TTL: String(30 + this.int(300)) };
      if (this.chance(0.5)) {
        req.ID = String(this.seed * 16 + this.leases.length + 1);
        this.chosenIds.add(handle);
      }
      this.leases.push(handle);
      return this.call('Lease', 'LeaseGrant', req, { grant: handle });
    }
    if (r < 61) return this.call('Lease', 'LeaseRevoke', { ID: this.leaseRef() });
    if (r < 64) return this.call('Lease', 'LeaseTimeToLive', { ID: this.leaseRef(), keys: this.chance(0.6) });
    if (r < 65) return this.call('Lease', 'LeaseLeases', {});
    if (r < 67) return void this.ops.push({ k: 'keepAlive', lease: this.leaseRef() as never });
    if (r < 75) return this.watch();
    if (r < 77 && this.watches.size > 0) {
      const stream = this.pick([...this.watches.keys()]);
      return void this.ops.push({ k: 'syncWatches' }, { k: 'progress', stream });
    }
    if (r < 79 && this.watches.size > 0) {
      const stream = this.pick([...this.watches.keys()]);
      return void this.ops.push({ k: 'cancelWatch', stream, watchId: this.int(this.watches.get(stream)!) });
    }
    if (r < 83) {
      this.ops.push({ k: 'syncWatches' });
      const revision = this.pick([rev('now', -this.int(3)), rev('now', 0), rev('compact', 0), rev('now', 1)]);
      return this.call('KV', 'Compact', { revision, physical: true });
    }
    if (r < 84) return this.call('Maintenance', 'Defragment', {}, { via: 'grpc' });
    if (r < 86) return this.call('Maintenance', 'HashKV', { revision: this.pick([0, rev('now', 0), rev('now', -1), rev('compact', 0), rev('compact', -1), rev('now', 1)] as Json[]) });
    if (r < 88) return this.call('Maintenance', 'Status', {});
    if (r < 89) return this.call('Cluster', 'MemberList', {});
    if (r < 90) return this.alarm();
    if (r < 91) return this.bigWrite();
    return this.call('KV', this.pick(['Range', 'Put', 'DeleteRange', 'Txn']), this.odd());
  }

  /** Requests etcd refuses: empty keys, too many or duplicate txn ops, a range end without a key. */
  odd(): Req {
    switch (this.int(5)) {
      case 0: return { key: '' };
      case 1: return { success: Array.from({ length: 129 }, () => ({ requestRange: { key: this.key() } })) };
      case 2: { const key = this.key(); return { success: [{ requestPut: { key, value: this.value() } }, { requestDeleteRange: { key } }] }; }
      case 3: return { success: [{ requestPut: { key: this.key(), value: this.value() } }, { requestTxn: { success: [{ requestPut: { key: this.key(), value: this.value() } }] } }] };
      default: return { key: this.key(), rangeEnd: this.key(), value: this.value() };
    }
  }

  /**
   * Two revisions of about 1.4 MB each (under etcd's 1.5 MiB request limit) on two keys, under a prefix watch
   * with prev_kv and fragment=true: the second one's watch response (values and previous values, 2.8 MB) passes
   * etcd's 2 MiB send limit (request limit + gRPC overhead), so it comes in pieces.
   */
  bigWrite(): void {
    const stream = this.int(3);
    const create: Req = { key: b64(this.prefix), rangeEnd: b64(this.prefix.slice(0, -1) + '0'), prevKv: true, fragment: true };
    this.watches.set(stream, (this.watches.get(stream) ?? 0) + 1);
    this.ops.push({ k: 'watch', stream, create }, { k: 'syncWatches' });
    for (let i = 0; i < 2; i++) {
      const big = (): string => Buffer.alloc(700 * 1024, 97 + this.int(26)).toString('base64');
      const ops = ['a', 'b'].map((k) => ({ requestPut: { key: b64(this.prefix + k), value: big() } }));
      this.call('KV', 'Txn', { success: ops }, { via: 'grpc' });
    }
  }

  /** NOSPACE raised by hand: a put is refused, reads and deletes still work, then the alarm is disarmed. */
  alarm(): void {
    const alarm = { memberID: { $member: 'self' } as Json, alarm: 1 };
    this.call('Maintenance', 'Alarm', { action: 1, ...alarm });
    this.call('Maintenance', 'Alarm', { action: 0 });
    this.call('KV', 'Put', this.put());
    this.call('KV', 'Range', this.range());
    this.call('Maintenance', 'Alarm', { action: 2, ...alarm });
    this.call('Maintenance', 'Alarm', { action: 0 });
  }

  kvSequence(): void {
    const n = 4 + this.int(12);
    for (let i = 0; i < n; i++) this.step();
  }

  /** Auth on for a while: users, roles, a read-write and a read-only range, the same refusals. */
  authSequence(): void {
    const p = this.prefix;
    const auth = (method: string, req: Req, as?: Caller): void => this.call('Auth', method, req, { via: 'grpc', ...(as ? { as } : {}) });
    auth('AuthEnable', {});
    auth('UserAdd', { name: 'root', password: 'rootpw' });
    auth('AuthEnable', {});
    auth('RoleAdd', { name: 'root' });
    auth('UserGrantRole', { user: 'root', role: 'root' });
    auth('UserAdd', { name: 'u', password: 'upw' });
    auth('RoleAdd', { name: 'r' });
    auth('RoleGrantPermission', { name: 'r', perm: { permType: 2, key: b64(p + 'a'), rangeEnd: b64(p + 'c') } });
    auth('RoleGrantPermission', { name: 'r', perm: { permType: 0, key: b64(p + 'x') } });
    auth('UserGrantRole', { user: 'u', role: 'r' });
    auth('AuthEnable', {});
    // A wrong password costs a per-source backoff on our side (README "Authentication"): only now and then.
    if (this.chance(0.25)) this.ops.push({ k: 'authenticate', user: 'user', password: 'wrong' });
    this.ops.push({ k: 'authenticate', user: 'root', password: 'rootpw' });
    this.ops.push({ k: 'authenticate', user: 'user', password: 'upw' });
    const n = 6 + this.int(10);
    for (let i = 0; i < n; i++) {
      const as = this.pick<Caller>(['user', 'user', 'user', 'root', 'none', 'bogus']);
      const r = this.int(10);
      if (r < 3) this.call('KV', 'Put', this.put(), { as });
      else if (r < 6) this.call('KV', 'Range', this.range(), { as });
      else if (r < 7) this.call('KV', 'DeleteRange', this.deleteRange(), { as });
      else if (r < 8) this.call('KV', 'Txn', this.txn(1), { as });
      else if (r < 9) auth(this.pick(['UserGet', 'RoleGet']), { name: this.pick(['u', 'r', 'root', 'nobody']) }, as);
      else auth(this.pick(['UserList', 'RoleList', 'AuthStatus']), {}, as);
    }
    auth('AuthDisable', {}, 'user');
    auth('AuthDisable', {}, 'root');
    auth('UserDelete', { name: 'u' });
    auth('UserDelete', { name: 'root' });
    auth('RoleDelete', { name: 'r' });
    auth('RoleDelete', { name: 'root' });
    auth('UserList', {});
  }

  /** Compares what every stream saw and the whole store, then leaves no stream, lease or key behind. */
  finish(): void {
    if (this.watches.size > 0) this.ops.push({ k: 'syncWatches' }, { k: 'watchLog' }, { k: 'closeWatches' });
    this.call('Maintenance', 'HashKV', { revision: 0 }, { via: 'grpc' });
    for (const handle of this.leases) this.call('Lease', 'LeaseRevoke', { ID: lease(handle) }, { via: 'grpc' });
    this.call('Lease', 'LeaseLeases', {}, { via: 'grpc' });
    this.call('KV', 'DeleteRange', { key: b64(this.prefix), rangeEnd: b64(this.prefix.slice(0, -1) + '0') }, { via: 'grpc' });
  }
}
