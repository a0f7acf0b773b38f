/**
 * One fill seed of the production node (issue 32, "the simulator's disk fills too"): 1–3 members, each on a
 * simulated disk of fillDiskBytes (server-node.ts: WAL segments, the backend's files and received snapshots
 * count against it, and a write past it fails with ENOSPC), with the production disk watch and the write
 * path's room count (main/disk-watch.ts, node/request/disk-room.ts) running on the member's Raft tick.
 *
 * 1. Writers put fillValueBytes values back to back, without pause, through the leader, until NOSPACE is up
 *    and every writer is refused.
 * 2. While NOSPACE is up: a write is refused with etcd's "database space exceeded"; reads work; every acked
 *    write is held by every member.
 * 3. One member is power-cut and restarted on its full disk: it must serve again.
 * 4. The operator's recovery, as etcd documents it: delete the keys, compact, defragment every member,
 *    `alarm disarm` (on half the seeds none: the disk watch must clear the NOSPACE it raised by itself, on the
 *    restarted member as on the others); then writes resume (large ones), and NOSPACE does not come back.
 * Throughout: no ENOSPC ever reaches a member's WAL or backend (NOSPACE was raised in time, with the reserve
 * recovery needs), and no member exits (the cluster's fatal list stays empty).
 *
 * With diskReserveIgnored (the watch sees the reserve as free) the seeds must fail: the check can fail.
 */
import { prefixEnd, utf8 } from '../../../src/base/bytes.js';
import { Prng } from '../../../src/base/prng.js';
import type { RangeRequest } from '../../../src/mvcc/types.js';
import { finishedCompactKey } from '../../../src/mvcc/compaction.js';
import { bytesToRevision } from '../../../src/mvcc/revision.js';
import type { RequestContext } from '../../../src/node/server-api.js';
import { ServerCluster } from './server-cluster.js';
import { tuningOf } from './run-node-seed.js';
import type { ServerNode } from './server-node.js';

/** The disk of each member: the 64 MiB tmpfs of issue 32's run. */
export const fillDiskBytes = 64 * 1024 * 1024;
/** The fastest writer of issue 32: 64 KiB values. */
export const fillValueBytes = 64 * 1024;
/** Simulated time the writers may take to fill the disks. */
const fillPhaseMs = 120_000;
/** How long the writers go on being refused before the checks. */
const refusedPhaseMs = 2000;
/** Simulated time the recovery may take. */
const recoveryMs = 60_000;
/** Large writes that must pass once the alarm is disarmed. */
const resumedWrites = 10;

export interface FillSeedOptions {
  seed: number;
  /** The disk watch keeps no reserve (the seed must then fail). */
  reserveIgnored?: boolean;
  /** Seeded slow disks and lossy links (`--fill-faults`). */
  faults?: boolean;
  /** Followers take every snapshot, room or not (the check that the faulted seeds can fail). */
  snapshotRoomIgnored?: boolean;
  trace?: (line: string) => void;
}

export interface FillSeedResult {
  seed: number;
  ok: boolean;
  error?: string;
  stats: {
    nodes: number; acked: number; refused: number; usedAtAlarm: number; usedAfterRecovery: number; resumed: number;
    /** Followers left behind with NOSPACE up: their disk had no room to restore the leader's snapshot. */
    behind: number;
  };
  trace: string[];
}

const fillPrefix = utf8('/fill/');

function ctx(): RequestContext {
  return { requireLeader: false, signal: new AbortController().signal };
}

function rangeOf(key: Uint8Array, rangeEnd: Uint8Array, serializable: boolean): RangeRequest {
  return {
    key, rangeEnd, limit: 0, revision: 0, sortOrder: 0, sortTarget: 0, serializable, keysOnly: false, countOnly: false,
    minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0,
  };
}

/** A value whose bytes tell its key apart (a lost or swapped value is seen). */
function valueOf(writer: number, i: number): Uint8Array {
  const v = new Uint8Array(fillValueBytes);
  v.fill((writer * 31 + i) % 251);
  v[0] = writer;
  v[1] = i & 0xff;
  v[2] = i >>> 8;
  return v;
}

function isNoSpace(error: unknown): boolean {
  return error instanceof Error && error.message.includes('database space exceeded');
}

/** Drive `c`'s loop until `p` settles or `ms` of simulated time pass; undefined on a timeout. */
async function settle<T>(c: ServerCluster, p: Promise<T>, ms: number): Promise<T | undefined> {
  let done = false;
  let value: T | undefined;
  let error: unknown;
  p.then((v) => ((value = v), (done = true)), (e: unknown) => ((error = e), (done = true)));
  await c.loop.runUntil(c.loop.nowMs + ms, () => done || c.fatal.length > 0 || enospc(c) !== undefined);
  if (error !== undefined) throw error;
  return value;
}

function enospc(c: ServerCluster): string | undefined {
  for (const n of c.nodes) if (n.enospc.length > 0) return `n${n.id}: ENOSPC reached ${n.enospc[0]} (NOSPACE was not raised in time)`;
  return undefined;
}

function usedBytes(n: ServerNode): number {
  return n.disk.fs.usedBytes() + n.disk.backend.diskBytes;
}

function noSpaceUp(c: ServerCluster): boolean {
  const l = c.leader();
  return l?.server?.state.alarms.list().some((a) => a.alarm === 'NOSPACE') === true;
}

export async function runFillSeed(o: FillSeedOptions): Promise<FillSeedResult> {
  const rng = new Prng(o.seed ^ 0xf1_11d1);
  const tuning = { ...tuningOf(rng, new Set(), o.seed), diskCapacityBytes: fillDiskBytes, ...(o.reserveIgnored === true ? { diskReserveIgnored: true } : {}), ...(o.snapshotRoomIgnored === true ? { snapshotRoomIgnored: true } : {}) };
  const voters = 1 + rng.int(3);
  const c = new ServerCluster({ seed: rng.fork().int(2 ** 31), voters, tuning, ...(o.trace !== undefined ? { trace: o.trace } : {}) });
  const stats: FillSeedResult['stats'] = { nodes: voters, acked: 0, refused: 0, usedAtAlarm: 0, usedAfterRecovery: 0, resumed: 0, behind: 0 };
  const result = (error?: string): FillSeedResult => ({ seed: o.seed, ok: error === undefined, ...(error !== undefined ? { error } : {}), stats, trace: c.traceLines });
  const onRejection = (error: unknown): void => void c.fatal.push(`unhandled rejection: ${String(error)}`);
  process.on('unhandledRejection', onRejection);
  try {
    const error = await run(c, rng, stats, o.faults === true);
    return result(c.fatal[0] ?? enospc(c) ?? error);
  } catch (error) {
    return result(c.fatal[0] ?? enospc(c) ?? (error instanceof Error ? error.stack ?? error.message : String(error)));
  } finally {
    process.off('unhandledRejection', onRejection);
  }
}

async function run(c: ServerCluster, rng: Prng, stats: FillSeedResult['stats'], faults: boolean): Promise<string | undefined> {
  for (const n of c.nodes) c.start(n);
  if (faults) {
    // Slow syncs and a lossy, slow network: a follower falls behind and is sent snapshots of the full store.
    // Off by default (its draws would change the default seeds). Without the receiver's admission of a
    // snapshot (DiskRoom.receiveSnapshot) a follower restored one its disk had no room for and the WAL's
    // snapshot file met ENOSPC (seeds 1 and 51 of 60); seed 2's follower could never fit its 23 MB snapshot
    // (3·S = 69 MB on a 64 MiB disk) and stays behind until the recovery.
    if (rng.int(3) === 0) c.disk = { syncMinMs: 1, syncMaxMs: 2 + rng.int(20), slowRate: rng.int(20) / 100, slowMinMs: 100, slowMaxMs: 200 + rng.int(800) };
    if (rng.int(3) === 0) c.link = { dropRate: rng.int(10) / 100, duplicateRate: rng.int(4) / 100, delayMinMs: 1, delayMaxMs: 2 + rng.int(40) };
  }
  // The values each acked put wrote, by key (latin1).
  const acked = new Map<string, Uint8Array>();
  const refusedBy = new Set<number>();
  let writing = true;
  const writers = 2 + rng.int(2);
  const write = async (w: number): Promise<void> => {
    for (let i = 0; writing; i++) {
      const leader = c.leader()?.server;
      if (leader === undefined) {
        await c.loop.sleep(50);
        continue;
      }
      const key = utf8(`/fill/${w}/${i}`);
      const value = valueOf(w, i);
      try {
        await leader.put({ key, value, lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, ctx());
        acked.set(Buffer.from(key).toString('latin1'), value);
        stats.acked++;
      } catch (error) {
        if (isNoSpace(error)) {
          stats.refused++;
          refusedBy.add(w);
        }
        await c.loop.sleep(10 + rng.int(40)); // a refused client retries soon
      }
    }
  };
  const running = Promise.all(Array.from({ length: writers }, (_, w) => write(w)));

  const filled = await settle(c, (async () => {
    while (!(noSpaceUp(c) && refusedBy.size === writers)) await c.loop.sleep(20);
    await c.loop.sleep(refusedPhaseMs);
    return true;
  })(), fillPhaseMs);
  if (filled === undefined) return `NOSPACE was not raised with every writer refused within ${fillPhaseMs} ms (${stats.acked} acked)`;
  stats.usedAtAlarm = Math.max(...c.nodes.map(usedBytes));
  c.trace(`NOSPACE up: ${stats.acked} acked, ${stats.refused} refused, most used ${stats.usedAtAlarm} of ${fillDiskBytes} bytes`);
  writing = false;
  await settle(c, running, 10_000);

  // While NOSPACE is up: writes refused, reads served, every acked write on every member.
  const leader = c.leader()?.server;
  if (leader === undefined) return 'no leader once the disks were full';
  const refused = await settle(c, leader.put({ key: utf8('/probe'), value: new Uint8Array(16), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, ctx()).then(() => 'accepted', (e: unknown) => (isNoSpace(e) ? 'refused' : String(e))), 10_000);
  if (refused !== 'refused') return `a write with NOSPACE up was ${refused ?? 'not answered'}, expected etcd's "database space exceeded"`;
  const read = await settle(c, leader.range(rangeOf(fillPrefix, prefixEnd(fillPrefix), false), ctx()), 10_000);
  if (read === undefined) return 'a linearizable read with NOSPACE up was not answered';
  // A follower that refused its leader's snapshot for room (3·S above its reserve: the file and LevelDB's restore)
  // stays behind, alive, until the recovery shrinks the leader's data: it is excused from catching up here, and
  // must hold nothing wrong (every acked key it holds has its acked value); after the recovery it must catch up.
  const behind = (n: ServerNode): boolean => n.server !== undefined && n.snapshotsRefused > 0 && n.lastRefusedSnapshotIndex > n.server.applied;
  const caughtUp = await settle(c, waitUntil(c, () => c.nodes.every((n) => n.server !== undefined && (n.server.applied >= leader.applied || behind(n)))), 15_000);
  if (caughtUp === undefined) return 'the members did not catch up with the leader';
  for (const n of c.nodes) {
    const excused = behind(n);
    if (excused) c.trace(`n${n.id} stays behind at ${n.server!.applied}: it refused ${n.snapshotsRefused} snapshots it has no room to restore`);
    const got = await settle(c, n.server!.range(rangeOf(fillPrefix, prefixEnd(fillPrefix), true), ctx()), 10_000);
    if (got === undefined) return `n${n.id}: a serializable read was not answered`;
    const held = new Map(got.kvs.map((kv) => [Buffer.from(kv.key).toString('latin1'), kv.value]));
    for (const [key, value] of acked) {
      const v = held.get(key);
      if (v === undefined && excused) continue;
      if (v === undefined || Buffer.compare(Buffer.from(v), Buffer.from(value)) !== 0) return `n${n.id}: acked write ${key} is ${v === undefined ? 'lost' : 'changed'}`;
    }
  }
  stats.behind = c.nodes.filter(behind).length;

  // A member restarted on its full disk (power cut and back): it must start and serve again, not exit.
  const victim = c.nodes[rng.int(c.nodes.length)]!;
  c.crash(victim);
  c.loop.at(200, () => c.restart(victim));
  const back = await settle(c, waitUntil(c, () => victim.up && victim.server !== undefined && c.leader() !== undefined), 20_000);
  if (back === undefined) return `n${victim.id} did not serve again after a restart on its full disk`;

  // The operator's recovery: del, compact, defrag (every member), alarm disarm; then writes resume.
  const recovered = await settle(c, recover(c, stats, rng.int(2) === 0), recoveryMs);
  if (recovered === undefined) return `the recovery (del, compact, defrag, disarm, ${resumedWrites} writes) did not finish in ${recoveryMs} ms (${stats.resumed} writes resumed)`;
  return recovered === true ? undefined : recovered;
}

async function recover(c: ServerCluster, stats: FillSeedResult['stats'], disarm: boolean): Promise<true | string> {
  const leader = (): NonNullable<ServerNode['server']> | undefined => c.leader()?.server;
  const del = await retry(c, () => leader()?.deleteRange({ key: fillPrefix, rangeEnd: prefixEnd(fillPrefix), prevKv: false }, ctx()));
  c.trace(`deleted ${del.deleted} keys at revision ${del.revision}`);
  await retry(c, () => leader()?.compact({ revision: del.revision, physical: true }, ctx()));
  // As an operator's `etcdctl compact --physical` against each member: defragment once its backend finished the
  // compaction (etcd's finishedCompactRev), or the defragment keeps what the compaction has yet to delete.
  await waitUntil(c, () => c.nodes.every((n) => finishedCompaction(n) >= del.revision));
  for (const n of c.nodes) {
    try {
      await n.server!.defragment(ctx());
    } catch (error) {
      return `n${n.id}: defragment failed: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  stats.usedAfterRecovery = Math.max(...c.nodes.map(usedBytes));
  c.trace(`compacted and defragmented: ${c.nodes.map((n) => `n${n.id} WAL ${n.disk.fs.usedBytes()} backend ${n.disk.backend.diskBytes}`).join(', ')}`);
  if (disarm) {
    const alarms = await retry(c, () => leader()?.alarm({ action: 'get', memberId: 0n, alarm: 'NONE' }, ctx()));
    for (const a of alarms) await retry(c, () => leader()?.alarm({ action: 'deactivate', memberId: a.memberId, alarm: a.alarm }, ctx()));
    c.trace(`disarmed ${alarms.length} alarms`);
  } else {
    // No disarm: the NOSPACE the disk raised clears by itself once the space is back, on a member restarted
    // while it was up too (its marker, main/disk-watch.ts).
    await waitUntil(c, () => !noSpaceUp(c));
    c.trace('NOSPACE cleared by the disk watch');
  }
  for (let i = 0; stats.resumed < resumedWrites; i++) {
    const l = leader();
    const ok = l === undefined ? false : await l.put({ key: utf8(`/after/${i}`), value: valueOf(9, i), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false }, ctx()).then(() => true, () => false);
    if (ok) stats.resumed++;
    else await c.loop.sleep(100);
  }
  // The space freed stays free: the alarm does not come back (issue 32: it rose again 3 s after a disarm).
  await c.loop.sleep(3000);
  if (noSpaceUp(c)) return `NOSPACE came back after the recovery (${c.nodes.map((n) => `n${n.id} used ${usedBytes(n)}`).join(', ')})`;
  // Every member caught up, one left behind for room included: the leader's snapshot now fits.
  const l = leader();
  if (l === undefined) return 'no leader after the recovery';
  await waitUntil(c, () => c.nodes.every((n) => n.server !== undefined && n.server.applied >= l.applied));
  for (const n of c.nodes) {
    const got = await n.server!.range(rangeOf(utf8('/after/'), prefixEnd(utf8('/after/')), true), ctx());
    if (got.kvs.length < resumedWrites) return `n${n.id} holds ${got.kvs.length} of the ${resumedWrites} writes after the recovery`;
  }
  return true;
}

function finishedCompaction(n: ServerNode): number {
  const v = n.disk.backend.getSync('meta', finishedCompactKey);
  return v === undefined ? 0 : bytesToRevision(v).rev.main;
}

/** Retries `op` (no leader, a leader change) until it answers. */
async function retry<T>(c: ServerCluster, op: () => Promise<T> | undefined): Promise<T> {
  for (;;) {
    const p = op();
    if (p !== undefined) {
      const got = await p.then((v) => ({ v }), () => undefined);
      if (got !== undefined) return got.v;
    }
    await c.loop.sleep(100);
  }
}

async function waitUntil(c: ServerCluster, ready: () => boolean): Promise<true> {
  while (!ready()) await c.loop.sleep(50);
  return true;
}
