/**
 * A single-member EtcdApi for the gRPC tests, built on src/mvcc without Raft: KvStore on a MemoryBackend,
 * the real Lessor (primary) and WatchHub, plus a member list and alarms. "Linearizable" and "serializable"
 * reads are the same. KV methods run the server's request validator first, as the EtcdApi contract says.
 * Knobs for tests: `leader` (false: no leader), `snapshotBytes`.
 *
 * Used only where the real node cannot produce what a test needs (issue 35): a member without a leader or a
 * learner switched at once (raw-wire), known snapshot bytes (etcdctl), or where the services are not what is
 * tested (tls, listener-errors). Service behaviour is tested on a real node (node-harness.ts) and against
 * etcd 3.4 (test/e2e/server-differential.test.ts).
 */
import { KvStore } from '../../../src/mvcc/kv-store.js';
import { Lessor } from '../../../src/mvcc/lessor.js';
import { MemoryBackend } from '../../../src/mvcc/memory-backend.js';
import { WatchHub } from '../../../src/mvcc/watch-hub.js';
import type { AlarmMember, AlarmType } from '../../../src/mvcc/types.js';
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
} from '../../../src/node/server-api.js';
import { EtcdError } from '../../../src/node/errors.js';
import { checkDeleteRange, checkPut, checkRange, checkTxn } from '../../../src/node/request/validate.js';

export const fakeClusterId = 0x1234_5678_9abc_def0n;
export const fakeMemberId = 0x8e9e_05c5_2164_694dn;

export class FakeApi implements EtcdApi {
  readonly store: KvStore;
  readonly lessor: Lessor;
  readonly hub: WatchHub;
  leader = true;
  raftTerm = 2;
  snapshotBytes: Uint8Array = new Uint8Array(100_000).map((_, i) => i % 251);
  readonly calls: string[] = [];
  #nextLease = 0x694d_0000_0000_0001n;
  #members: Member[] = [
    { id: fakeMemberId, name: 'fake', peerUrls: ['http://127.0.0.1:2380'], clientUrls: [], isLearner: false },
  ];
  #nextMember = 0x1000n;
  #alarms: AlarmMember[] = [];
  #syncTimer = setInterval(() => this.hub.sync(), 20);

  private constructor(store: KvStore, lessor: Lessor) {
    this.store = store;
    this.lessor = lessor;
    this.hub = new WatchHub(store);
    this.#syncTimer.unref();
  }

  static async create(): Promise<FakeApi> {
    const store = await KvStore.open(new MemoryBackend(), { quotaBackendBytes: -1 });
    const lessor = new Lessor();
    lessor.setStore(store);
    store.setLeaseHooks(lessor);
    lessor.promote(Date.now());
    return new FakeApi(store, lessor);
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

  learner = false;
  isLearner(): boolean {
    return this.learner;
  }

  #enter(name: string, ctx: RequestContext): void {
    this.calls.push(name);
    if (!this.leader) throw new EtcdError('noLeader');
    if (ctx.signal.aborted) throw new EtcdError('canceled');
  }

  async range(req: Parameters<EtcdApi['range']>[0], ctx: RequestContext) {
    checkRange(req);
    this.#enter('range', ctx);
    return this.store.range(req);
  }
  async put(req: Parameters<EtcdApi['put']>[0], ctx: RequestContext) {
    checkPut(req);
    this.#enter('put', ctx);
    return this.store.put(req);
  }
  async deleteRange(req: Parameters<EtcdApi['deleteRange']>[0], ctx: RequestContext) {
    checkDeleteRange(req);
    this.#enter('deleteRange', ctx);
    return this.store.deleteRange(req);
  }
  async txn(req: Parameters<EtcdApi['txn']>[0], ctx: RequestContext) {
    checkTxn(req);
    this.#enter('txn', ctx);
    return this.store.txn(req);
  }
  async compact(req: { revision: number; physical: boolean }, ctx: RequestContext) {
    this.#enter('compact', ctx);
    void this.store.compact(req.revision).physicalDone.catch(() => {});
    return { revision: this.store.revision };
  }

  async leaseGrant(req: { ttlSeconds: number; id: bigint }, ctx: RequestContext): Promise<LeaseGrantResult> {
    this.#enter('leaseGrant', ctx);
    return this.lessor.grant(req.id === 0n ? this.#nextLease++ : req.id, req.ttlSeconds);
  }
  async leaseRevoke(leaseId: bigint, ctx: RequestContext) {
    this.#enter('leaseRevoke', ctx);
    this.lessor.revoke(leaseId);
    return { revision: this.store.revision };
  }
  async leaseKeepAlive(leaseId: bigint, ctx: RequestContext): Promise<number> {
    this.#enter('leaseKeepAlive', ctx);
    return this.lessor.renew(leaseId, Date.now());
  }
  async leaseTimeToLive(leaseId: bigint, keys: boolean, ctx: RequestContext): Promise<LeaseTimeToLiveResult> {
    this.#enter('leaseTimeToLive', ctx);
    return this.lessor.timeToLive(leaseId, Date.now(), keys);
  }
  async leaseLeases(ctx: RequestContext): Promise<bigint[]> {
    this.#enter('leaseLeases', ctx);
    return this.lessor.leases().map((l) => l.id);
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
  async status(_ctx: RequestContext): Promise<StatusResult> {
    this.calls.push('status');
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
    await this.store.defragment();
  }
  async hash(ctx: RequestContext) {
    this.#enter('hash', ctx);
    const h = await this.store.hash();
    return { hash: h.hash, revision: h.hashRevision };
  }
  async hashKV(revision: number, ctx: RequestContext): Promise<HashKvResult> {
    this.#enter('hashKV', ctx);
    const h = await this.store.hashKV(revision);
    return { hash: h.hash, revision: h.hashRevision, compactRevision: h.compactRevision };
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
