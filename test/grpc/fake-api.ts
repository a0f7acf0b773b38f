/**
 * A single-member EtcdApi for the gRPC tests: FakeStore for KV, the real mvcc WatchHub for watches, a lease
 * table, a member list and alarms. No Raft: "linearizable" and "serializable" reads are the same. Knobs for
 * tests: `leader` (false: no leader), `snapshotBytes`.
 */
import { createHash } from 'node:crypto';
import { WatchHub } from '../../src/mvcc/watch-hub.js';
import type { AlarmMember, AlarmType, KeyValue } from '../../src/mvcc/types.js';
import { MvccError } from '../../src/mvcc/types.js';
import type {
  AlarmAction,
  EtcdApi,
  HashKvResult,
  LeaseGrantResult,
  LeaseTimeToLiveResult,
  Member,
  MemberAddResult,
  RequestContext,
  ResponseHeader,
  SnapshotSource,
  StatusResult,
  WatchSink,
  WatchStream,
} from '../../src/server/api.js';
import { EtcdError } from '../../src/server/errors.js';
import { leaseTtlSecondsMax } from '../../src/base/limits.js';
import { FakeStore } from './fake-store.js';

interface Lease {
  ttlSeconds: number;
  keys: Set<string>;
}

export const fakeClusterId = 0x1234_5678_9abc_def0n;
export const fakeMemberId = 0x8e9e_05c5_2164_694dn;

export class FakeApi implements EtcdApi {
  readonly store = new FakeStore();
  readonly hub = new WatchHub(this.store);
  leader = true;
  raftTerm = 2;
  snapshotBytes: Uint8Array = new Uint8Array(100_000).map((_, i) => i % 251);
  readonly calls: string[] = [];
  #leases = new Map<bigint, Lease>();
  #nextLease = 0x694d_0000_0000_0001n;
  #members: Member[] = [
    { id: fakeMemberId, name: 'fake', peerUrls: ['http://127.0.0.1:2380'], clientUrls: [], isLearner: false },
  ];
  #nextMember = 0x1000n;
  #alarms: AlarmMember[] = [];
  #syncTimer = setInterval(() => this.hub.sync(), 20);

  constructor() {
    this.#syncTimer.unref();
    this.store.onPut = (kv) => {
      if (kv.lease === 0n) return;
      const lease = this.#leases.get(kv.lease);
      if (!lease) throw new MvccError('leaseNotFound');
      lease.keys.add(Buffer.from(kv.key).toString('latin1'));
    };
    this.store.onDelete = (kv) => this.#leases.get(kv.lease)?.keys.delete(Buffer.from(kv.key).toString('latin1'));
  }

  close(): void {
    clearInterval(this.#syncTimer);
    this.hub.close();
  }

  header(revision?: number): ResponseHeader {
    return { clusterId: fakeClusterId, memberId: fakeMemberId, revision: revision ?? this.store.revision, raftTerm: this.raftTerm };
  }

  hasLeader(): boolean {
    return this.leader;
  }

  #enter(name: string, ctx: RequestContext): void {
    this.calls.push(name);
    if (!this.leader) throw new EtcdError('noLeader');
    if (ctx.signal.aborted) throw new EtcdError('canceled');
  }

  async range(req: Parameters<EtcdApi['range']>[0], ctx: RequestContext) {
    this.#enter('range', ctx);
    return this.store.range(req);
  }
  async put(req: Parameters<EtcdApi['put']>[0], ctx: RequestContext) {
    this.#enter('put', ctx);
    return this.store.put(req);
  }
  async deleteRange(req: Parameters<EtcdApi['deleteRange']>[0], ctx: RequestContext) {
    this.#enter('deleteRange', ctx);
    return this.store.deleteRange(req);
  }
  async txn(req: Parameters<EtcdApi['txn']>[0], ctx: RequestContext) {
    this.#enter('txn', ctx);
    return this.store.txn(req);
  }
  async compact(req: { revision: number; physical: boolean }, ctx: RequestContext) {
    this.#enter('compact', ctx);
    this.store.compact(req.revision);
    return { revision: this.store.revision };
  }

  async leaseGrant(req: { ttlSeconds: number; id: bigint }, ctx: RequestContext): Promise<LeaseGrantResult> {
    this.#enter('leaseGrant', ctx);
    if (req.ttlSeconds > leaseTtlSecondsMax) throw new EtcdError('leaseTtlTooLarge');
    const leaseId = req.id === 0n ? this.#nextLease++ : req.id;
    if (this.#leases.has(leaseId)) throw new EtcdError('leaseExist');
    this.#leases.set(leaseId, { ttlSeconds: Math.max(req.ttlSeconds, 1), keys: new Set() });
    return { id: leaseId, ttlSeconds: Math.max(req.ttlSeconds, 1) };
  }
  async leaseRevoke(leaseId: bigint, ctx: RequestContext) {
    this.#enter('leaseRevoke', ctx);
    const lease = this.#leases.get(leaseId);
    if (!lease) throw new EtcdError('leaseNotFound');
    const keys = [...lease.keys].map((k) => ({ deleteRange: { key: Buffer.from(k, 'latin1'), rangeEnd: new Uint8Array(0), prevKv: false } }));
    this.store.txn({ compare: [], success: keys, failure: [] });
    this.#leases.delete(leaseId);
    return { revision: this.store.revision };
  }
  async leaseKeepAlive(leaseId: bigint, ctx: RequestContext): Promise<number> {
    this.#enter('leaseKeepAlive', ctx);
    const lease = this.#leases.get(leaseId);
    if (!lease) throw new MvccError('leaseNotFound');
    return lease.ttlSeconds;
  }
  async leaseTimeToLive(leaseId: bigint, keys: boolean, ctx: RequestContext): Promise<LeaseTimeToLiveResult> {
    this.#enter('leaseTimeToLive', ctx);
    const lease = this.#leases.get(leaseId);
    if (!lease) throw new EtcdError('leaseNotFound');
    const list = keys ? [...lease.keys].sort().map((k) => Buffer.from(k, 'latin1')) : [];
    return { id: leaseId, ttlSeconds: lease.ttlSeconds, grantedTtlSeconds: lease.ttlSeconds, keys: list };
  }
  async leaseLeases(ctx: RequestContext): Promise<bigint[]> {
    this.#enter('leaseLeases', ctx);
    return [...this.#leases.keys()];
  }

  openWatchStream(sink: WatchSink, _ctx: RequestContext): WatchStream {
    this.calls.push('watch');
    return this.hub.openStream(sink.send);
  }

  async memberAdd(req: { peerUrls: string[]; isLearner: boolean }, ctx: RequestContext): Promise<MemberAddResult> {
    this.#enter('memberAdd', ctx);
    if (this.#members.some((m) => m.peerUrls.some((u) => req.peerUrls.includes(u)))) throw new EtcdError('peerUrlExist');
    const member: Member = { id: this.#nextMember++, name: '', peerUrls: req.peerUrls, clientUrls: [], isLearner: req.isLearner };
    this.#members.push(member);
    return { member, members: [...this.#members] };
  }
  async memberRemove(memberId: bigint, ctx: RequestContext): Promise<Member[]> {
    this.#enter('memberRemove', ctx);
    const i = this.#members.findIndex((m) => m.id === memberId);
    if (i < 0) throw new EtcdError('memberNotFound');
    this.#members.splice(i, 1);
    return [...this.#members];
  }
  async memberUpdate(req: { id: bigint; peerUrls: string[] }, ctx: RequestContext): Promise<Member[]> {
    this.#enter('memberUpdate', ctx);
    const m = this.#members.find((x) => x.id === req.id);
    if (!m) throw new EtcdError('memberNotFound');
    m.peerUrls = req.peerUrls;
    return [...this.#members];
  }
  async memberList(_linearizable: boolean, ctx: RequestContext): Promise<Member[]> {
    this.#enter('memberList', ctx);
    return [...this.#members];
  }
  async memberPromote(memberId: bigint, ctx: RequestContext): Promise<Member[]> {
    this.#enter('memberPromote', ctx);
    const m = this.#members.find((x) => x.id === memberId);
    if (!m) throw new EtcdError('memberNotFound');
    if (!m.isLearner) throw new EtcdError('memberNotLearner');
    if (m.name === '') throw new EtcdError('learnerNotReady');
    m.isLearner = false;
    return [...this.#members];
  }

  async alarm(req: { action: AlarmAction; memberId: bigint; alarm: AlarmType }, ctx: RequestContext): Promise<AlarmMember[]> {
    this.#enter('alarm', ctx);
    const matches = (a: AlarmMember): boolean =>
      (req.memberId === 0n || a.memberId === req.memberId) && (req.alarm === 'NONE' || a.alarm === req.alarm);
    if (req.action === 'get') return this.#alarms.filter(matches);
    if (req.action === 'activate') {
      const a = { memberId: req.memberId, alarm: req.alarm };
      this.#alarms.push(a);
      return [a];
    }
    const gone = this.#alarms.filter(matches);
    this.#alarms = this.#alarms.filter((a) => !matches(a));
    return gone;
  }
  async status(ctx: RequestContext): Promise<StatusResult> {
    this.calls.push('status');
    void ctx;
    return {
      dbSizeBytes: 20480,
      dbSizeInUseBytes: 16384,
      leader: this.leader ? fakeMemberId : 0n,
      raftIndex: 10 + this.store.revision,
      raftTerm: this.raftTerm,
      raftAppliedIndex: 10 + this.store.revision,
      isLearner: false,
      errors: this.#alarms.map((a) => `memberID:${a.memberId} alarm:${a.alarm} `),
    };
  }
  async defragment(ctx: RequestContext): Promise<void> {
    this.#enter('defragment', ctx);
  }
  async hash(ctx: RequestContext) {
    this.#enter('hash', ctx);
    return { hash: 0xdeadbeef, revision: this.store.revision };
  }
  async hashKV(revision: number, ctx: RequestContext): Promise<HashKvResult> {
    this.#enter('hashKV', ctx);
    const rev = revision === 0 ? this.store.revision : revision;
    const kvs: KeyValue[] = this.store.range({ key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]), limit: 0, revision: rev, sortOrder: 0, sortTarget: 0, serializable: false, keysOnly: false, countOnly: false, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0 }).kvs;
    const h = createHash('sha256');
    for (const kv of kvs) h.update(kv.key).update(kv.value);
    return { hash: h.digest().readUInt32BE(0), revision: rev, compactRevision: this.store.compactRevision };
  }
  async snapshot(ctx: RequestContext): Promise<SnapshotSource> {
    this.#enter('snapshot', ctx);
    const bytes = this.snapshotBytes;
    async function* chunks(): AsyncIterable<Uint8Array> {
      for (let i = 0; i < bytes.length; i += 7000) yield bytes.subarray(i, i + 7000);
    }
    return { sizeBytes: bytes.length, chunks: chunks() };
  }
  async moveLeader(targetId: bigint, ctx: RequestContext): Promise<void> {
    this.#enter('moveLeader', ctx);
    if (!this.#members.some((m) => m.id === targetId)) throw new EtcdError('badLeaderTransferee');
  }
}
