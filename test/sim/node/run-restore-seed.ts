/**
 * One restore seed of the production node (O1 in test/GLOSSARY.md, issue 25): a member is rebuilt from a backup of
 * another cluster's member, members join it, and then it is lost.
 *
 * 1. A source cluster (1–3 members, the node seeds' clients and watchers) runs for 2–6 s; then a backup is taken
 *    from one of its serving members at that moment: the records of its store's key bucket, its leases and its
 *    compaction, as `snapshot save` reads them from a consistent view.
 * 2. A new member `r` is built from the backup by the production restore (src/backup/import.ts restoreInto)
 *    on its own simulated disk, and started alone: it leads at once.
 * 3. Two members join it one after the other, as `--server` joins do: the leader adds each as a learner, the
 *    learner boots with an empty log, and is promoted once in sync. A writer keeps putting through the leader.
 *    Seeded faults meanwhile: a joiner crashes and restarts, links drop and delay messages, disks are slow.
 * 4. `r` is crashed for good; the two joiners must elect a leader, accept a write at the next revision, and
 *    hold the same key space (HashKV) as `r` held, with every key of the backup.
 *
 * Throughout, the cluster's state-machine check compares the store revision every member reaches after each
 * applied index: a joiner that replays a log without the backup's data (the defect of issue 25, item 1)
 * is at another revision after the same index, and the seed fails.
 */
import { utf8 } from '../../../src/base/bytes.js';
import { Prng } from '../../../src/base/prng.js';
import { entryToRecord, type RevisionRecord } from '../../../src/backup/revision-record.js';
import type { LeaseRecord } from '../../../src/mvcc/lease-codec.js';
import { decodeLeaseRecord } from '../../../src/mvcc/lease-codec.js';
import type { Member, RequestContext } from '../../../src/node/server-api.js';
import { ServerCluster } from './server-cluster.js';
import type { ServerNode } from './server-node.js';
import { tuningOf } from './run-node-seed.js';
import { Workload } from './workload.js';

const restoredPhaseMs = 60_000;

export interface RestoreSeedResult {
  seed: number;
  ok: boolean;
  error?: string;
  stats: { sourceNodes: number; records: number; writes: number; snapshots: number; crashes: number };
  trace: string[];
}

interface Backup {
  records: RevisionRecord[];
  leases: LeaseRecord[];
  compactRevision: number;
  revision: number;
}

function ctx(): RequestContext {
  return { requireLeader: false, signal: new AbortController().signal };
}

/** memberAdd takes only http(s) peer URLs; the simulated network routes by the URL string. */
function peerUrlOf(id: number): string {
  return `http://n${id}.sim:2380`;
}

function member(id: number, name: string): Member {
  return { id: BigInt(id), name, peerUrls: [peerUrlOf(id)], clientUrls: [`http://n${id}.sim:2379`], isLearner: false };
}

/** Drive `c`'s loop until `p` settles or `ms` of simulated time pass; undefined on a timeout. */
async function settle<T>(c: ServerCluster, p: Promise<T>, ms: number): Promise<T | undefined> {
  let done = false;
  let value: T | undefined;
  let error: unknown;
  p.then((v) => ((value = v), (done = true)), (e: unknown) => ((error = e), (done = true)));
  await c.loop.runUntil(c.loop.nowMs + ms, () => done || c.fatal.length > 0);
  if (error !== undefined) throw error;
  return value;
}

async function takeBackup(n: ServerNode): Promise<Backup> {
  const store = n.server!.state.store;
  const exported = await store.exportSnapshot();
  try {
    const records: RevisionRecord[] = [];
    for await (const [k, v] of exported.view.scan('key')) records.push(entryToRecord(k, v));
    const leases: LeaseRecord[] = [];
    for await (const [, v] of exported.view.scan('lease')) leases.push(decodeLeaseRecord(v));
    const revision = records.length > 0 ? records[records.length - 1]!.modRevision : 1;
    return { records, leases, compactRevision: store.compactRevision, revision };
  } finally {
    await exported.view.close();
  }
}

export async function runRestoreSeed(o: { seed: number; trace?: (line: string) => void }): Promise<RestoreSeedResult> {
  const rng = new Prng(o.seed ^ 0x7e5_702e);
  const tuning = tuningOf(rng, new Set(), o.seed);
  const sourceNodes = 1 + rng.int(3);
  const stats: RestoreSeedResult['stats'] = { sourceNodes, records: 0, writes: 0, snapshots: 0, crashes: 0 };
  const source = new ServerCluster({ seed: rng.fork().int(2 ** 31), voters: sourceNodes, tuning });
  const c = new ServerCluster({ seed: rng.fork().int(2 ** 31), voters: 0, tuning, ...(o.trace !== undefined ? { trace: o.trace } : {}) });
  const result = (error?: string): RestoreSeedResult => {
    stats.snapshots = c.snapshotsSent;
    stats.crashes = c.crashes;
    return { seed: o.seed, ok: error === undefined, ...(error !== undefined ? { error } : {}), stats, trace: c.traceLines };
  };
  const onRejection = (error: unknown): void => void c.fatal.push(`unhandled rejection: ${String(error)}`);
  process.on('unhandledRejection', onRejection);
  try {
    const error = await run(source, c, rng, stats);
    return result(error ?? c.fatal[0]);
  } catch (error) {
    return result(c.fatal[0] ?? (error instanceof Error ? error.stack ?? error.message : String(error)));
  } finally {
    process.off('unhandledRejection', onRejection);
  }
}

async function run(source: ServerCluster, c: ServerCluster, rng: Prng, stats: RestoreSeedResult['stats']): Promise<string | undefined> {
  // 1. The source cluster and its backup.
  for (const n of source.nodes) source.start(n);
  const w = new Workload(source, rng.fork());
  w.start(3, 1);
  await source.loop.runUntil(2000 + rng.int(4000), () => source.fatal.length > 0);
  if (source.fatal.length > 0) return `source cluster: ${source.fatal[0]}`;
  const serving = source.nodes.filter((n) => n.server !== undefined);
  const from = serving[rng.int(serving.length)];
  if (from === undefined) return 'source cluster: no member serving';
  const backup = await settle(source, takeBackup(from), 10_000);
  if (backup === undefined) return 'source cluster: the backup did not finish';
  stats.records = backup.records.length;

  // 2. The restored member, alone.
  const r = c.addNode(member(1, 'r'));
  await r.prepareRestore([r.member], backup.records, { leases: backup.leases, compactRevision: backup.compactRevision });
  c.trace(`restored n1 from n${from.id} of the source: ${backup.records.length} records, revision ${backup.revision}, ${backup.leases.length} leases`);
  c.start(r);
  const led = await settle(c, waitUntil(c, () => r.server?.isLeader === true), 10_000);
  if (led === undefined) return c.fatal[0] ?? 'the restored member did not lead';
  if (r.server!.state.store.revision !== Math.max(backup.revision, backup.compactRevision, 1)) {
    return `the restored member serves revision ${r.server!.state.store.revision}, the backup was at ${backup.revision}`;
  }

  // 3. Two joins, with a writer and seeded faults meanwhile.
  let writing = true;
  const writer = (async () => {
    for (let i = 0; writing; i++) {
      const leader = c.leader();
      if (leader?.server !== undefined) {
        await leader.server.put({ key: utf8(`j/${i % 50}`), value: utf8(`v${i}`), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, ctx())
          .then(() => stats.writes++, () => undefined);
      }
      await c.loop.sleep(20 + rng.int(80));
    }
  })();
  if (rng.int(2) === 0) c.link = { dropRate: rng.int(15) / 100, duplicateRate: rng.int(4) / 100, delayMinMs: 1, delayMaxMs: 2 + rng.int(40) };
  if (rng.int(3) === 0) c.disk = { syncMinMs: 1, syncMaxMs: 2 + rng.int(20), slowRate: rng.int(20) / 100, slowMinMs: 100, slowMaxMs: 200 + rng.int(800) };
  for (const id of [2, 3]) {
    const joined = await settle(c, join(c, rng, id), restoredPhaseMs / 2);
    if (joined !== true) return c.fatal[0] ?? `n${id} did not join and get promoted (${String(joined)})`;
  }
  c.heal();
  writing = false;
  await settle(c, writer, 15_000);

  // 4. The restored member is lost; the joiners carry on with everything it had.
  const caughtUp = await settle(c, waitUntil(c, () => c.nodes.every((n) => n.server !== undefined && n.server.applied >= r.server!.applied)), 15_000);
  if (caughtUp === undefined) return c.fatal[0] ?? 'the joiners did not catch up with the restored member';
  const rev = r.server!.state.store.revision;
  const expected = (await settle(c, r.server!.state.store.hashKV(rev), 5000))!.hash;
  c.trace(`n1 (restored) at revision ${rev}, HashKV ${expected}: CRASH for good`);
  c.crash(r);
  const survivors = c.nodes.filter((n) => n !== r);
  const hashes = await settle(c, Promise.all(survivors.map((n) => n.server!.state.store.hashKV(rev))), 5000);
  if (hashes === undefined || hashes.some((h) => h.hash !== expected)) {
    return `the joiners' HashKV at revision ${rev} (${hashes?.map((h) => h.hash).join(', ')}) differs from the restored member's ${expected}`;
  }
  const put = await settle(c, retryPut(c), 20_000);
  if (put === undefined) return c.fatal[0] ?? 'no write succeeded after the restored member was lost';
  if (put !== rev + 1) return `the first write after the loss got revision ${put}, expected ${rev + 1}`;
  for (const n of survivors) {
    const all = n.server!.state.store.range({
      key: utf8('\0'), rangeEnd: utf8('\0'), limit: 0, revision: backup.revision, sortOrder: 0, sortTarget: 0, serializable: true, keysOnly: true,
      countOnly: true, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0,
    });
    const live = new Set<string>();
    for (const rec of backup.records) {
      const key = Buffer.from(rec.key).toString('latin1');
      if (rec.tombstone) live.delete(key);
      else live.add(key);
    }
    if (backup.revision > backup.compactRevision && all.count !== live.size) {
      return `n${n.id} holds ${all.count} keys at the backup's revision ${backup.revision}, the backup had ${live.size}`;
    }
  }
  return undefined;
}

/** The leader adds `id` as a learner, the learner boots empty, and is promoted once the leader finds it in sync. */
async function join(c: ServerCluster, rng: Prng, id: number): Promise<boolean> {
  let added: Member | undefined;
  while (added === undefined) {
    const leader = c.leader();
    if (leader?.server !== undefined) {
      added = await leader.server.memberAdd({ peerUrls: [peerUrlOf(id)], isLearner: true }, ctx()).then((res) => res.member, (e: unknown) => void c.trace(`member add: ${String(e)}`));
    }
    if (added === undefined) await c.loop.sleep(100);
  }
  const n = c.addNode({ ...member(id, `n${id}`), id: added.id, isLearner: true });
  n.prepareJoin();
  c.trace(`n${id} added as learner ${added.id.toString(16)}; starting it empty`);
  c.start(n);
  if (rng.int(3) === 0) {
    const after = 50 + rng.int(1500);
    c.loop.at(after, () => {
      c.crash(n);
      c.loop.at(200 + rng.int(1000), () => c.restart(n));
    });
  }
  for (;;) {
    const leader = c.leader();
    if (leader?.server !== undefined) {
      const promoted = await leader.server.memberPromote(added.id, ctx()).then(() => true, () => false);
      if (promoted) {
        c.trace(`n${id} promoted`);
        return true;
      }
    }
    await c.loop.sleep(200);
  }
}

async function waitUntil(c: ServerCluster, ready: () => boolean): Promise<true> {
  while (!ready()) await c.loop.sleep(50);
  return true;
}

async function retryPut(c: ServerCluster): Promise<number> {
  for (;;) {
    const leader = c.leader();
    if (leader?.server !== undefined) {
      const rev = await leader.server.put({ key: utf8('after-loss'), value: utf8('1'), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, ctx())
        .then((res) => res.revision, () => undefined);
      if (rev !== undefined) return rev;
    }
    await c.loop.sleep(100);
  }
}
