/**
 * Received snapshots on disk: a leader may send the same snapshot again while the first send is still
 * arriving (a retry on a slow or loaded link). Each receive writes a temp file of its own, so the file that
 * lands is always one whole stream, never two interleaved (which once failed a joiner's restore with
 * "invalid snapshot: unknown bucket"). A stream is checked as it is written: a damaged one never lands, so
 * the restore may read a landed file once, without a check pass.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SnapshotDataDir, snapshotDataName } from '../../src/storage/snapshot-data.js';
import { StateStreamEncoder } from '../../src/mvcc/state-stream.js';
import { MessageType, type Message } from '../../src/raft/types.js';
import { removeDir, tempDir } from '../e2e/harness.js';

const meta = { index: 42, term: 3, confState: { voters: [1n], learners: [] } };
const message = { type: MessageType.Snap, from: 1n, to: 2n, term: 3, snapshot: { meta, data: new Uint8Array(0) } } as unknown as Message;

/** A whole snapshot stream whose values are all `fill`, cut into `pieces` writes. */
function stream(fill: number, pieces: number): Uint8Array[] {
  const encoder = new StateStreamEncoder();
  const parts: Uint8Array[] = [];
  for (let i = 0; i < 100; i++) {
    const chunk = encoder.add('key', new Uint8Array([i]), new Uint8Array(1000).fill(fill));
    if (chunk !== undefined) parts.push(chunk);
  }
  parts.push(...encoder.finish());
  const whole = Buffer.concat(parts);
  const step = Math.ceil(whole.length / pieces);
  return Array.from({ length: pieces }, (_, i) => whole.subarray(i * step, (i + 1) * step));
}

describe('SnapshotDataDir', () => {
  it('keeps concurrent receives of the same snapshot apart', async () => {
    const dir = tempDir('snapdata');
    try {
      const snaps = new SnapshotDataDir(dir);
      await snaps.init();
      const a = await snaps.open(message);
      const b = await snaps.open(message);
      const [sa, sb] = [stream(0xaa, 5), stream(0xbb, 5)];
      for (let i = 0; i < 5; i++) {
        await a.write(sa[i]!);
        await b.write(sb[i]!);
      }
      await a.commit();
      await b.commit();
      const landed = readFileSync(`${dir}/${snapshotDataName(meta)}`);
      expect(landed.equals(Buffer.concat(sb))).toBe(true);
    } finally {
      removeDir(dir);
    }
  });

  it('times each received file\'s fsync and its whole save (etcd_snap_db_*), only for a stream that lands', async () => {
    const dir = tempDir('snapdata');
    try {
      const snaps = new SnapshotDataDir(dir);
      await snaps.init();
      const fsyncs: number[] = [];
      const saves: number[] = [];
      const timed = snaps.receiver({ fsyncSeconds: (s) => fsyncs.push(s), saveSeconds: (s) => saves.push(s) });
      const a = await timed.open(message);
      for (const part of stream(0xaa, 5)) await a.write(part);
      await a.commit();
      expect(fsyncs).toHaveLength(1);
      expect(saves).toHaveLength(1);
      expect(saves[0]!).toBeGreaterThanOrEqual(fsyncs[0]!);
      const broken = await timed.open(message);
      await broken.write(stream(0xbb, 5)[0]!);
      await expect(broken.commit()).rejects.toThrow(/truncated/);
      await broken.abort();
      expect([fsyncs.length, saves.length]).toEqual([1, 1]);
      // The directory's own untimed receive reports nothing.
      const untimed = await snaps.open(message);
      for (const part of stream(0xcc, 5)) await untimed.write(part);
      await untimed.commit();
      expect([fsyncs.length, saves.length]).toEqual([1, 1]);
    } finally {
      removeDir(dir);
    }
  });

  it.each([
    // Inside the last value: the framing holds, only the checksum can tell.
    ['a flipped value byte', (s: Uint8Array[]) => s.map((p, i) => (i === 4 ? Uint8Array.from(p, (b, j) => (j === p.length - 10 ? b ^ 1 : b)) : p)), /checksum mismatch/],
    ['a missing tail', (s: Uint8Array[]) => s.slice(0, 4), /invalid snapshot: truncated record/],
    ['a broken record header', (s: Uint8Array[]) => [s[0]!.map((b, j) => (j === 8 ? 0x7f : b)), ...s.slice(1)], /unknown bucket 127/],
  ])('refuses a stream with %s before it lands', async (_, damage, error) => {
    const dir = tempDir('snapdata');
    try {
      const snaps = new SnapshotDataDir(dir);
      await snaps.init();
      const target = await snaps.open(message);
      const receive = async (): Promise<void> => {
        for (const piece of damage(stream(0xaa, 5))) await target.write(piece);
        await target.commit();
      };
      await expect(receive()).rejects.toThrow(error);
      await target.abort();
      expect(existsSync(`${dir}/${snapshotDataName(meta)}`)).toBe(false);
      expect(readdirSync(dir)).toEqual([]);
      expect(await snaps.source(meta)).toBeUndefined();
    } finally {
      removeDir(dir);
    }
  });

  it('after a restore, removes the data it restored and keeps a newer snapshot received meanwhile', async () => {
    // The production-node simulator found it: a follower on a slow disk received 2/205 while restoring 2/201,
    // and the restore's cleanup deleted 2/205's data before its own restore ran (an assertion stopped it).
    const dir = tempDir('snapdata');
    try {
      const snaps = new SnapshotDataDir(dir);
      await snaps.init();
      for (const index of [201, 205]) {
        const m = { ...meta, index, term: 2 };
        const rx = await snaps.open({ ...message, snapshot: { meta: m, data: new Uint8Array(0) } } as Message);
        for (const piece of stream(index % 256, 1)) await rx.write(piece);
        await rx.commit();
      }
      await snaps.removeThrough(201);
      expect(await snaps.source({ term: 2, index: 201 })).toBeUndefined();
      expect(await snaps.source({ term: 2, index: 205 })).toBeDefined();
      await snaps.removeAll();
      expect(await snaps.source({ term: 2, index: 205 })).toBeUndefined();
    } finally {
      removeDir(dir);
    }
  });

  it('refuses a snapshot its disk has no room to restore, chunk by chunk: nothing lands, the partial file goes (issue 32)', async () => {
    const dir = tempDir('snapdata');
    try {
      const snaps = new SnapshotDataDir(dir);
      await snaps.init();
      const timings = { fsyncSeconds: () => {}, saveSeconds: () => {} };
      let admitted = 0;
      let received = 0;
      // Room for two chunks of five.
      const sink = snaps.receiver(timings, () => ({ admit: () => ++admitted <= 2, received: () => void received++ }));
      const parts = stream(0xaa, 5);
      const target = await sink.open(message);
      await target.write(parts[0]!);
      await target.write(parts[1]!);
      await expect(target.write(parts[2]!)).rejects.toThrow(/NOSPACE: no room to restore snapshot 3\/42/);
      await target.abort(); // as the transport does when a write fails
      expect(readdirSync(dir)).toEqual([]);
      expect(received).toBe(0);
      // With room, the same snapshot lands and the room is told it arrived whole.
      const roomy = snaps.receiver(timings, () => ({ admit: () => true, received: () => void received++ }));
      const again = await roomy.open(message);
      for (const part of parts) await again.write(part);
      await again.commit();
      expect(existsSync(`${dir}/${snapshotDataName(meta)}`)).toBe(true);
      expect(received).toBe(1);
    } finally {
      removeDir(dir);
    }
  });
});
