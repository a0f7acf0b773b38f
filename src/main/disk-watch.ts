/**
 * Disk full (W9, O4; issue 25, item 4). A member whose disk fills exits on the first failed write (an
 * fsync or write error is fatal, and must be), and on a small SD card that is one busy afternoon. So the
 * member watches the free space (statfs) of the file systems of its log and its backend, and raises
 * NOSPACE *before* they fill, while a reserve is left (diskReserveBytes):
 *
 *   reserve = the log's next segments: when space is short the log prepares each next segment at half the
 *             free space, down to walSegmentBytesMin (segment-log.ts), so two of those (the one prepared
 *             ahead and the one after it) keep it appending
 *           + one LevelDB compaction (levelCompactionBytesMax: it writes its output, at most its inputs,
 *             before deleting them)
 *
 * With NOSPACE raised, writes are refused with etcd's "etcdserver: mvcc: database space exceeded" (the apply
 * path's capped applier, as for the quota), reads, deletes, compaction and alarms still work. The watch
 * clears the alarm once every watched file system has the reserve plus a margin again (no flapping at the
 * edge) and the store is within its quota, but only an alarm it raised, or found while the disk was short
 * (after a restart): a NOSPACE the quota raised stays until `etcdctl alarm disarm`, as in etcd.
 *
 * Polled every diskWatchIntervalMs, and sooner from the write path: the request pipeline counts what each
 * admitted write may cost the disk (node/request/disk-room.ts) and asks for a look after every MiB of it, or
 * at once when a write would eat into the reserve (it is refused then, before the alarm is up). A second
 * was too long: the fastest writer (64 KiB puts back to back) filled a 64 MiB disk in ~1.9 s (issue 32).
 *
 * An alarm this watch raised is remembered in a file (member/nospace-disk) so that a restarted member
 * clears it the same way when the space is back, and an operator's or the quota's NOSPACE still is not.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { rm, stat, writeFile } from 'node:fs/promises';
import type { DiskRoom } from '../node/request/disk-room.js';
import { walSegmentBytesMin } from '../base/limits.js';
import { levelCompactionBytesMax } from '../storage/level-backend.js';
import type { AlarmMember } from '../mvcc/types.js';
import { NodeFsPort } from '../wal/fs-port.js';
import type { MemberOptions } from '../config/member-options.js';
import type { EtcdServer } from '../node/etcd-server.js';
import type { Logger } from '../config/log.js';
import { walDirOf } from '../storage/wal-dir.js';

export const diskWatchIntervalMs = 1000;
/** The log's share of the reserve (see above). */
export const walReserveBytes = 2 * walSegmentBytesMin;

export function diskReserveBytes(dbBytes: number): number {
  return walReserveBytes + levelCompactionBytesMax(dbBytes);
}
/** Space above the reserve before the alarm is cleared. */
export const diskClearMarginBytes = 8 * 1024 * 1024;

export interface DiskWatchHost {
  memberId: bigint;
  /** The directories whose file systems are watched: the log's and the backend's. */
  dirs: readonly string[];
  /** The free space to keep (diskReserveBytes of the backend's current size). */
  reserveBytes(): number;
  /** statfs: bytes free for this process; undefined when unknown. */
  freeBytes(dir: string): Promise<number | undefined>;
  alarms(): AlarmMember[];
  overQuota(): boolean;
  setNoSpace(action: 'activate' | 'deactivate'): Promise<void>;
  logger: Logger;
  /** What an operator can delete to make room (named in the log). */
  advice: string;
  /** The write path's count of room (kept current by each look; it asks for looks). */
  room?: DiskRoom;
  /** The record that this member's NOSPACE is the disk's, kept across restarts. */
  marker?: { present(): Promise<boolean>; set(raised: boolean): Promise<void> };
  /** Runs the poll (default: a timer of its own; a member's rides its Raft tick, EtcdServer.every). */
  every?(ms: number, fn: () => void): { cancel(): void };
}

export class DiskWatch {
  readonly #h: DiskWatchHost;
  #timer: { cancel(): void } | undefined;
  #running: Promise<void> | undefined;
  /** This member's NOSPACE is the disk's: raised here, or present while the disk was short. */
  #ours = false;
  /**
   * A look has seen this member's NOSPACE since the start. Until then an absent alarm proves no disarm: a
   * restarted member looks before it has replayed its log's tail, which may still raise it (issue 32: the
   * marker was dropped at that first look, and the alarm then stayed until a manual disarm).
   */
  #seenRaised = false;
  /** The alarm's proposal under way: looks go on meanwhile (the room stays current), and none proposes it again. */
  #raising: Promise<void> | undefined;

  constructor(host: DiskWatchHost) {
    this.#h = host;
  }

  /** Starts polling, with a first look at once; resolves once it knows whether a NOSPACE from before a restart is the disk's. */
  async start(): Promise<void> {
    if (this.#h.marker !== undefined && (await this.#h.marker.present())) this.#ours = true;
    this.#h.room?.attach({ recheck: () => void this.#look() });
    const poll = (): void => void this.#look();
    this.#timer = this.#h.every?.(diskWatchIntervalMs, poll) ?? unrefInterval(diskWatchIntervalMs, poll);
    void this.#look();
  }

  /** One look unless one is under way. */
  #look(): Promise<void> {
    this.#running ??= this.check()
      .catch((error: unknown) => this.#h.logger.warn('disk watch: check failed', { error: error instanceof Error ? error.message : String(error) }))
      .finally(() => (this.#running = undefined));
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#timer?.cancel();
    await this.#running;
  }

  /** One look at the disks: raise or clear this member's NOSPACE. */
  async check(): Promise<void> {
    const h = this.#h;
    const mark = h.room?.mark() ?? 0;
    const refused = h.room?.takeRefused() ?? 0;
    const low = await this.#lowest();
    if (low === undefined) return;
    const raised = h.alarms().some((a) => a.alarm === 'NOSPACE' && a.memberId === h.memberId);
    if (raised) this.#seenRaised = true;
    const reserveBytes = h.reserveBytes();
    h.room?.observed(low.freeBytes, reserveBytes, mark);
    // A write refused for room that still has none raises the alarm too: refusals an operator cannot see
    // in `alarm list` would be a puzzle.
    if (low.freeBytes < reserveBytes + refused) {
      if (raised || this.#raising !== undefined) {
        if (!this.#ours) await h.marker?.set(true);
        this.#ours = true;
        return;
      }
      h.logger.warn('disk nearly full; raising NOSPACE (writes are refused, reads still served, cleared when space returns)', {
        dir: low.dir, freeBytes: low.freeBytes, reserveBytes, advice: h.advice,
      });
      // Recorded first: an alarm raised and then forgotten by a restart would stay until a disarm.
      await h.marker?.set(true);
      this.#ours = true;
      // Not awaited by the look: a proposal can wait for a leader for seconds, and every look (and with it
      // the room's count of free bytes) waited behind it (issue 32).
      this.#raising = h.setNoSpace('activate')
        .catch((error: unknown) => h.logger.warn('disk watch: cannot raise NOSPACE', { error: error instanceof Error ? error.message : String(error) }))
        .finally(() => (this.#raising = undefined));
    } else if (raised && this.#ours && low.freeBytes >= reserveBytes + diskClearMarginBytes && !h.overQuota()) {
      h.logger.info('disk space is back; clearing NOSPACE', { dir: low.dir, freeBytes: low.freeBytes, reserveBytes });
      await h.setNoSpace('deactivate');
      this.#ours = false;
      this.#seenRaised = false;
      await h.marker?.set(false);
    } else if (!raised && this.#ours && this.#seenRaised && this.#raising === undefined) {
      this.#ours = false; // disarmed by an operator meanwhile
      this.#seenRaised = false;
      await h.marker?.set(false);
    }
  }

  async #lowest(): Promise<{ dir: string; freeBytes: number } | undefined> {
    // All at once: each statfs is a round trip through the thread pool, and each completion a wake-up.
    const free = await Promise.all(this.#h.dirs.map((dir) => this.#h.freeBytes(dir)));
    let low: { dir: string; freeBytes: number } | undefined;
    this.#h.dirs.forEach((dir, i) => {
      const f = free[i];
      if (f !== undefined && (low === undefined || f < low.freeBytes)) low = { dir, freeBytes: f };
    });
    return low;
  }
}

/** What an operator of this data directory can delete to make room. */
export function spaceAdvice(dataDir: string, walDir: string): string {
  return `delete old scheduled snapshots (etcetera snapshot ls|delete|prune, in ${dataDir}/snapshots), ` +
    `member-old-* directories a cluster reset left in ${dataDir}, spare log segments (*.wal.spare in ${walDir}), ` +
    'or other files on that disk; or move the data directory to a larger disk';
}

/**
 * A backend that cannot open on a full disk says only "Database failed to open": name the disk, its free
 * bytes and what to delete instead. Returns undefined when the disk is not the cause.
 */
export async function fullDiskError(
  dir: string,
  error: unknown,
  freeBytes: (dir: string) => Promise<number | undefined>,
  advice: string,
): Promise<Error | undefined> {
  const text = `${String(error)} ${String((error as { cause?: unknown }).cause ?? '')}`;
  const free = await freeBytes(dir);
  const noSpace = /ENOSPC|No space left/i.test(text) || (free !== undefined && free < fullDiskBytesMax);
  if (!noSpace) return undefined;
  return new Error(
    `the disk of ${dir} is full (${free ?? 'unknown'} bytes free): the backend cannot open. To make room, ${advice}`,
    { cause: error },
  );
}

/**
 * A start that failed on a full disk, told as such: the disk of the data directory (or of the log, when
 * that is elsewhere), its free bytes and what to delete. Undefined when the failure is not ENOSPC, or is
 * already told (the backend's open, above).
 */
export async function startOnFullDiskError(o: Pick<MemberOptions, 'dataDir' | 'walDir'>, error: unknown): Promise<Error | undefined> {
  let text = '';
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    text += ` ${String(e)} ${String((e as { code?: unknown }).code ?? '')}`;
  }
  if (!/ENOSPC|No space left/i.test(text) || /is full \(/.test(text)) return undefined;
  const walDir = walDirOf(o.dataDir, o.walDir);
  const dir = /wal/i.test(text) ? walDir : o.dataDir;
  const free = await new NodeFsPort().freeBytes(dir);
  return new Error(
    `the disk of ${dir} is full (${free ?? 'unknown'} bytes free): the member cannot start. To make room, ${spaceAdvice(o.dataDir, walDir)}`,
    { cause: error },
  );
}

/** Below this many free bytes a failed open is blamed on the disk (LevelDB opens by writing a new log and manifest). */
export const fullDiskBytesMax = 4 * 1024 * 1024;

/**
 * The marker of a NOSPACE raised by the disk. Best effort: on a disk too full for even this file the
 * restarted member still finds the disk short and takes the alarm as the disk's (check above).
 */
export function noSpaceMarker(memberDir: string, logger: Logger): NonNullable<DiskWatchHost['marker']> {
  const file = join(memberDir, 'nospace-disk');
  return {
    present: () => stat(file).then(() => true, () => false),
    set: async (raised) => {
      const done = raised ? writeFile(file, 'NOSPACE raised by the disk watch\n', { mode: 0o600 }) : rm(file, { force: true });
      await done.catch((error: unknown) => logger.warn('disk watch: cannot record the alarm', { file, error: String(error) }));
    },
  };
}

/** The member's watch over its log's and backend's disks, started (stop it before closing the server). */
function unrefInterval(ms: number, fn: () => void): { cancel(): void } {
  const t = setInterval(fn, ms);
  t.unref();
  return { cancel: () => clearInterval(t) };
}

/** One directory per file system: the log's and the backend's are usually on the same one, and one statfs tells both. */
export function oneDirPerDevice(dirs: readonly string[], deviceOf: (dir: string) => number | undefined): string[] {
  const seen = new Set<number>();
  return dirs.filter((dir) => {
    const dev = deviceOf(dir);
    if (dev === undefined) return true; // unknown: keep watching it on its own
    if (seen.has(dev)) return false;
    seen.add(dev);
    return true;
  });
}

function deviceOf(dir: string): number | undefined {
  try {
    return statSync(dir).dev;
  } catch {
    return undefined;
  }
}

/**
 * What a member's disk watch needs besides its server: the real member's statfs, marker file and timeout
 * (startDiskWatch below), or the production-node simulator's disk of a capacity (test/sim/node/server-node.ts),
 * so the simulator's seeds run this watch as it runs in production (issue 32).
 */
export interface MemberDiskPorts {
  dirs: readonly string[];
  freeBytes(dir: string): Promise<number | undefined>;
  marker: NonNullable<DiskWatchHost['marker']>;
  advice: string;
  logger: Logger;
  /** The signal bounding the proposal of an alarm (a timeout on the member's time). */
  alarmSignal(): AbortSignal;
}

/** The one way a data member's disk watch is built and started, over its server and its write path's room. */
export async function startMemberDiskWatch(memberId: bigint, server: EtcdServer, room: DiskRoom, ports: MemberDiskPorts): Promise<DiskWatch> {
  const watch = new DiskWatch({
    memberId,
    dirs: ports.dirs,
    every: (ms, fn) => server.every(ms, fn),
    reserveBytes: () => diskReserveBytes(server.state.store.dbSizeBytes()),
    freeBytes: (dir) => ports.freeBytes(dir),
    alarms: () => server.state.alarms.list(),
    overQuota: () => server.state.store.overQuota(0),
    setNoSpace: async (action) => {
      await server.alarm({ action, memberId, alarm: 'NOSPACE' }, { requireLeader: false, signal: ports.alarmSignal() });
    },
    logger: ports.logger,
    advice: ports.advice,
    room,
    marker: ports.marker,
  });
  await watch.start();
  return watch;
}

export async function startDiskWatch(o: MemberOptions, memberId: bigint, server: EtcdServer, room: DiskRoom): Promise<DiskWatch> {
  const walDir = walDirOf(o.dataDir, o.walDir);
  const fs = new NodeFsPort();
  return startMemberDiskWatch(memberId, server, room, {
    dirs: oneDirPerDevice([walDir, join(o.dataDir, 'member', 'db')], deviceOf),
    freeBytes: (dir) => fs.freeBytes(dir),
    marker: noSpaceMarker(join(o.dataDir, 'member'), o.logger),
    advice: spaceAdvice(o.dataDir, walDir),
    logger: o.logger,
    alarmSignal: () => AbortSignal.timeout(o.electionTimeoutMs * 5),
  });
}
