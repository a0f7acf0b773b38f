/**
 * The disk watch with an injected statfs (issue 25, item 4): NOSPACE is raised below the reserve, never twice,
 * cleared only once the reserve plus a margin is free again and the store is within its quota; the lowest of
 * the watched file systems decides. The full-disk start error names the disk, the free bytes and what to delete.
 */
import { describe, expect, it } from 'vitest';
import type { AlarmMember } from '../../src/mvcc/types.js';
import { diskClearMarginBytes, diskReserveBytes, diskWatchIntervalMs, DiskWatch, fullDiskError, oneDirPerDevice, spaceAdvice, startOnFullDiskError, type DiskWatchHost } from '../../src/main/disk-watch.js';
import { DiskRoom } from '../../src/node/request/disk-room.js';
import type { Logger } from '../../src/config/log.js';

const MiB = 1024 * 1024;
const quiet = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {}, child: () => quiet } as unknown as Logger;

function setup(reserveBytes = 100 * MiB, extra: Partial<DiskWatchHost> = {}) {
  const free = new Map<string, number>([['/wal', 500 * MiB], ['/db', 500 * MiB]]);
  let alarms: AlarmMember[] = [];
  let overQuota = false;
  const calls: string[] = [];
  const watch = new DiskWatch({
    memberId: 7n,
    dirs: ['/wal', '/db'],
    reserveBytes: () => reserveBytes,
    freeBytes: async (dir) => free.get(dir),
    alarms: () => alarms,
    overQuota: () => overQuota,
    setNoSpace: async (action) => {
      calls.push(action);
      alarms = action === 'activate' ? [{ memberId: 7n, alarm: 'NOSPACE' }] : [];
    },
    logger: quiet,
    advice: spaceAdvice('/data', '/wal'),
    ...extra,
  });
  const setAlarm = async (): Promise<void> => void (alarms = [{ memberId: 7n, alarm: 'NOSPACE' }]);
  return { watch, free, calls, setOverQuota: (v: boolean) => (overQuota = v), alarms: () => alarms, setAlarm };
}

describe('disk watch', () => {
  it('raises NOSPACE once when a watched disk falls below the reserve, and clears it when space returns', async () => {
    const s = setup();
    await s.watch.check();
    expect(s.calls).toEqual([]);
    s.free.set('/db', 99 * MiB);
    await s.watch.check();
    await s.watch.check();
    expect(s.calls).toEqual(['activate']);
    s.free.set('/db', 100 * MiB + diskClearMarginBytes - 1); // above the reserve, inside the margin: kept
    await s.watch.check();
    expect(s.calls).toEqual(['activate']);
    s.free.set('/db', 100 * MiB + diskClearMarginBytes);
    await s.watch.check();
    expect(s.calls).toEqual(['activate', 'deactivate']);
  });

  it('the lowest disk decides: a full log disk raises it though the backend disk has room', async () => {
    const s = setup();
    s.free.set('/wal', 10 * MiB);
    await s.watch.check();
    expect(s.calls).toEqual(['activate']);
  });

  it('a NOSPACE the quota raised is not cleared while the store is over its quota', async () => {
    const s = setup();
    s.free.set('/db', 1 * MiB);
    await s.watch.check();
    s.setOverQuota(true);
    s.free.set('/db', 500 * MiB);
    await s.watch.check();
    expect(s.calls).toEqual(['activate']);
    s.setOverQuota(false);
    await s.watch.check();
    expect(s.calls).toEqual(['activate', 'deactivate']);
  });

  it('a NOSPACE the quota raised while the disk had room is left for the operator to disarm, as in etcd', async () => {
    const s = setup();
    await s.setAlarm();
    await s.watch.check();
    await s.watch.check();
    expect(s.calls).toEqual([]);
    expect(s.alarms()).toHaveLength(1);
  });

  it('a NOSPACE found while the disk is short (after a restart) is the disk\'s: cleared when space returns', async () => {
    const s = setup();
    await s.setAlarm();
    s.free.set('/wal', 1 * MiB);
    await s.watch.check();
    expect(s.calls).toEqual([]);
    s.free.set('/wal', 500 * MiB);
    await s.watch.check();
    expect(s.calls).toEqual(['deactivate']);
  });

  it('a NOSPACE it raised before a restart is cleared by the restarted watch once space returns, by its marker (issue 32)', async () => {
    let marked = false;
    const marker = { present: async () => marked, set: async (raised: boolean) => void (marked = raised) };
    const before = setup(100 * MiB, { marker });
    before.free.set('/db', 99 * MiB);
    await before.watch.check();
    expect(marked).toBe(true);
    // Restarted with the space back: the alarm is in the store, the disk has room.
    const after = setup(100 * MiB, { marker });
    await after.setAlarm();
    await after.watch.start();
    await after.watch.stop();
    expect(after.calls).toEqual(['deactivate']);
    expect(marked).toBe(false);
  });

  it('a restarted watch that looks before the log\'s tail raised NOSPACE again keeps its marker, and clears the alarm once applied (issue 32)', async () => {
    let marked = true;
    const marker = { present: async () => marked, set: async (raised: boolean) => void (marked = raised) };
    const s = setup(100 * MiB, { marker });
    // The first look: the disk has room again, the alarm is not applied yet (it is in the tail still to replay).
    await s.watch.start();
    await s.watch.stop();
    expect(marked).toBe(true);
    await s.setAlarm(); // the tail's NOSPACE applied
    await s.watch.check();
    expect(s.calls).toEqual(['deactivate']);
    expect(marked).toBe(false);
  });

  it('looks go on while the alarm\'s proposal waits, so the room follows the disk; the alarm is proposed once (issue 32)', async () => {
    const room = new DiskRoom();
    const proposals: string[] = [];
    let release = (): void => {};
    const s = setup(100 * MiB, {
      room,
      setNoSpace: (action) => {
        proposals.push(action);
        return new Promise<void>((resolve) => (release = resolve)); // no leader to commit it yet
      },
    });
    const look = async (): Promise<void> => {
      const done = await Promise.race([s.watch.check().then(() => 'done'), new Promise((r) => setTimeout(() => r('stuck'), 1000))]);
      expect(done).toBe('done');
    };
    s.free.set('/db', 99 * MiB);
    await look();
    await look();
    expect(proposals).toEqual(['activate']);
    s.free.set('/db', 500 * MiB); // space freed meanwhile
    await look();
    expect(room.admit(MiB)).toBe(true);
    release();
  });

  it('without the marker, a NOSPACE found at a restart with room is the operator\'s or the quota\'s: kept', async () => {
    const marker = { present: async () => false, set: async () => {} };
    const s = setup(100 * MiB, { marker });
    await s.setAlarm();
    await s.watch.start();
    await s.watch.stop();
    expect(s.calls).toEqual([]);
  });

  it('a write the room refused raises NOSPACE when the next look still finds no room for it', async () => {
    const room = new DiskRoom();
    const s = setup(100 * MiB, { room });
    s.free.set('/db', 101 * MiB);
    await s.watch.check(); // above the reserve: no alarm, the room learns 101 MiB free
    expect(room.admit(MiB)).toBe(false); // 3 MiB of disk would cross the reserve
    await s.watch.check();
    expect(s.calls).toEqual(['activate']);
  });

  it('another member\'s NOSPACE is not this watch\'s to clear', async () => {
    const s = setup();
    const watch = new DiskWatch({
      memberId: 7n, dirs: ['/db'], reserveBytes: () => MiB, freeBytes: async () => 500 * MiB,
      alarms: () => [{ memberId: 8n, alarm: 'NOSPACE' }], overQuota: () => false,
      setNoSpace: async (a) => void s.calls.push(a), logger: quiet, advice: '',
    });
    await watch.check();
    expect(s.calls).toEqual([]);
  });
});

describe('what an idle member pays for the watch (issue 34)', () => {
  it('asks one statfs per file system: the log and the backend on one disk are one question', () => {
    const dev = new Map<string, number | undefined>([['/d/wal', 5], ['/d/db', 5], ['/ssd/wal', 9], ['/gone', undefined]]);
    expect(oneDirPerDevice(['/d/wal', '/d/db'], (d) => dev.get(d))).toEqual(['/d/wal']);
    expect(oneDirPerDevice(['/ssd/wal', '/d/db', '/gone'], (d) => dev.get(d))).toEqual(['/ssd/wal', '/d/db', '/gone']);
  });

  it('polls on the periodic runner it is given (a member passes its Raft tick) and stops with it', async () => {
    const s = setup();
    const asked: string[] = [];
    let poll: (() => void) | undefined;
    let canceled = false;
    const watch = new DiskWatch({
      memberId: 7n, dirs: ['/wal', '/db'], reserveBytes: () => 100 * MiB,
      freeBytes: async (dir) => (asked.push(dir), s.free.get(dir)),
      alarms: () => [], overQuota: () => false, setNoSpace: async () => {}, logger: quiet, advice: '',
      every: (ms, fn) => {
        expect(ms).toBe(diskWatchIntervalMs);
        poll = fn;
        return { cancel: () => void (canceled = true) };
      },
    });
    watch.start();
    poll!();
    await watch.stop();
    expect(asked).toEqual(['/wal', '/db']);
    expect(canceled).toBe(true);
  });
});

describe('the reserve', () => {
  it('is two smallest log segments plus one LevelDB compaction, which cannot write more than the database holds', () => {
    expect(diskReserveBytes(0)).toBe(2 * MiB + 2 * MiB);
    expect(diskReserveBytes(3 * MiB)).toBe(2 * MiB + 3 * MiB + 2 * MiB);
    expect(diskReserveBytes(10_000 * MiB)).toBe(2 * MiB + 25 * MiB + 2 * MiB);
  });
});

describe('a backend that cannot open on a full disk', () => {
  it('names the disk, the free bytes and what to delete', async () => {
    const cause = new Error('IO error: /data/member/db/MANIFEST-000002: No space left on device');
    const err = await fullDiskError('/data/member/db', Object.assign(new Error('Database failed to open'), { cause }), async () => 4096, spaceAdvice('/data', '/data/member/wal'));
    expect(err?.message).toBe(
      'the disk of /data/member/db is full (4096 bytes free): the backend cannot open. To make room, delete old scheduled snapshots ' +
        '(etcetera snapshot ls|delete|prune, in /data/snapshots), member-old-* directories a cluster reset left in /data, spare log segments ' +
        '(*.wal.spare in /data/member/wal), or other files on that disk; or move the data directory to a larger disk',
    );
  });

  it('is not blamed on the disk when there is room and no ENOSPC', async () => {
    expect(await fullDiskError('/d', new Error('Corruption: bad block'), async () => 500 * MiB, '')).toBeUndefined();
  });
});

describe('a start that meets a full disk anywhere (issue 32)', () => {
  it('says the disk is full and what to delete, instead of a bare ENOSPC', async () => {
    const cause = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: 'ENOSPC' });
    const err = await startOnFullDiskError({ dataDir: '/nonexistent/d', walDir: undefined }, new Error('wal: segment preparation failed', { cause }));
    expect(err?.message).toMatch(/^the disk of \/nonexistent\/d\/member\/wal is full \(unknown bytes free\): the member cannot start\. To make room, delete old scheduled snapshots/);
    expect(err?.cause).toBeInstanceOf(Error);
  });

  it('leaves other failures, and a full disk already told, as they are', async () => {
    expect(await startOnFullDiskError({ dataDir: '/d', walDir: undefined }, new Error('EACCES'))).toBeUndefined();
    expect(await startOnFullDiskError({ dataDir: '/d', walDir: undefined }, new Error('the disk of /d/member/db is full (0 bytes free): ENOSPC'))).toBeUndefined();
  });
});
