/**
 * Recovery rules on the simulated FS: torn tails (W2), zeroed tails and junk (W3), absurd lengths (W4),
 * mid-log corruption (W5), rotation never leaves a name without contents (W10), release only behind a durable
 * snapshot (W11).
 */
import { describe, expect, it } from 'vitest';
import type { Entry } from '../../src/raft/types.js';
import { WalCorruptError } from '../../src/wal/errors.js';
import { checkSegmentHeader, parseSegmentName, scanSegment, segmentHeaderBytes } from '../../src/wal/segment.js';
import { Wal, type WalOptions } from '../../src/wal/wal.js';
import { SimFs } from './sim-fs.js';
import { runWorkload } from './workload.js';

const dir = '/d';
const opts = (fs: SimFs, preallocate = true): WalOptions => ({
  fs,
  profile: 'ssd',
  tuning: { segmentBytes: 64 * 1024, preallocate, batchBytesMax: 4096 },
});
const entry = (index: number, size: number, term = 1): Entry => ({ term, index, type: 0, data: new Uint8Array(size).fill(index & 0xff) });

/** n saves of one entry each, each its own batch; returns the fs and the record offsets of each save. */
async function buildLog(n: number, size: (i: number) => number, preallocate = true): Promise<{ fs: SimFs; path: string; offsets: number[] }> {
  const fs = new SimFs();
  const { wal } = await Wal.open(dir, opts(fs, preallocate));
  for (let i = 1; i <= n; i++) await wal.save({ entries: [entry(i, size(i))] });
  await wal.close();
  const name = (await fs.list(dir)).find((x) => parseSegmentName(x))!;
  const path = `${dir}/${name}`;
  const bytes = fs.bytes(path);
  const offsets: number[] = [];
  for (let at = segmentHeaderBytes; offsets.length < n; ) {
    offsets.push(at);
    const len = new DataView(bytes.buffer, bytes.byteOffset + at).getUint32(0, true);
    at += 16 + ((len + 7) & ~7);
  }
  return { fs, path, offsets };
}

async function reopen(fs: SimFs, preallocate = true) {
  const logs: string[] = [];
  const r = await Wal.open(dir, { ...opts(fs, preallocate), logger: (l) => logs.push(l) });
  return { ...r, logs };
}

async function openError(fs: SimFs, preallocate = true): Promise<WalCorruptError> {
  const err: unknown = await Wal.open(dir, opts(fs, preallocate)).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WalCorruptError);
  return err as WalCorruptError;
}

describe('torn tail (W2)', () => {
  it('a zeroed sector inside the last record drops only that record, and appends resume', async () => {
    const { fs, path, offsets } = await buildLog(5, (i) => (i === 5 ? 2000 : 100));
    const last = offsets[4]!;
    const sector = (Math.floor(last / 512) + 2) * 512;
    fs.bytes(path).fill(0, sector, sector + 512);
    const { wal, state, logs } = await reopen(fs);
    expect(state.entries.map((e) => e.index)).toEqual([1, 2, 3, 4]);
    expect(logs.some((l) => l.includes('torn tail'))).toBe(true);
    await wal.save({ entries: [entry(5, 10, 2)] });
    await wal.close();
    const again = await reopen(fs);
    expect(again.state.entries.map((e) => [e.index, e.term])).toEqual([[1, 1], [2, 1], [3, 1], [4, 1], [5, 2]]);
    await again.wal.close();
  });

  it('a record cut short (the file ends inside it, or it is zero from a sector boundary on) is dropped', async () => {
    for (const preallocate of [true, false]) {
      const { fs, path, offsets } = await buildLog(4, (i) => (i === 4 ? 1500 : 300), preallocate);
      const cut = (Math.floor(offsets[3]! / 512) + 1) * 512; // the record's second sector never reached the disk
      if (preallocate) fs.bytes(path).fill(0, cut);
      else await (await fs.open(path, 'existing')).truncate(cut);
      const { wal, state, logs } = await reopen(fs, preallocate);
      expect(state.entries.map((e) => e.index)).toEqual([1, 2, 3]);
      const why = preallocate ? `its part in the sector at offset ${cut} is all zeros` : 'the file ends inside the record';
      expect(logs.find((l) => l.includes('torn tail'))).toContain(`torn write: ${why}`);
      await wal.close();
    }
  });
});

describe('a complete record with a CRC mismatch is corruption, not a torn write (issue 25, item 2)', () => {
  const cases: { name: string; preallocate: boolean; damage: (bytes: Uint8Array, at: number) => void; reason: string }[] = [
    {
      name: 'four bytes flipped in the payload of the last record, zeroed preallocation after it',
      preallocate: true,
      damage: (b, at) => [40, 41, 600, 1200].forEach((i) => (b[at + 16 + i]! ^= 0x5a)),
      reason: 'CRC mismatch in a complete record (walpb: crc mismatch)',
    },
    {
      name: 'one bit flipped in the payload of the last record, the file ending with it',
      preallocate: false,
      damage: (b, at) => void (b[at + 16 + 700]! ^= 0x01),
      reason: 'CRC mismatch in a complete record (walpb: crc mismatch)',
    },
    {
      name: 'the type byte of the last record changed',
      preallocate: true,
      damage: (b, at) => void (b[at + 4] = 9),
      reason: 'unknown record type 9: the header was written (no sector of it is zero) but is not a record header',
    },
  ];
  for (const c of cases) {
    it(`${c.name}: refuses to start, names file and offset, changes nothing`, async () => {
      const { fs, path, offsets } = await buildLog(5, (i) => (i === 5 ? 1500 : 100), c.preallocate);
      c.damage(fs.bytes(path), offsets[4]!);
      const before = fs.bytes(path).slice();
      const err = await openError(fs, c.preallocate);
      expect(err.file).toBe(path);
      expect(err.offset).toBe(offsets[4]);
      expect(err.reason).toContain(c.reason);
      expect(err.message).toMatch(/refusing to start$/);
      expect(Buffer.from(fs.bytes(path)).equals(Buffer.from(before))).toBe(true);
    });
  }

  it('a complete record in the middle of the last batch is corruption even though the batch was the last', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, opts(fs));
    await wal.save({ entries: [entry(1, 100)] });
    await wal.save({ entries: [entry(2, 100)], hardState: { term: 1, vote: 1n, commit: 1 } }); // two records, one batch
    await wal.close();
    const path = `${dir}/${(await fs.list(dir)).find((x) => parseSegmentName(x))!}`;
    const bytes = fs.bytes(path);
    const len = new DataView(bytes.buffer, bytes.byteOffset).getUint32(segmentHeaderBytes, true);
    const at = segmentHeaderBytes + 16 + ((len + 7) & ~7);
    bytes[at + 16 + 30]! ^= 0x80;
    const err = await openError(fs);
    expect(err.offset).toBe(at);
    expect(err.reason).toContain('walpb: crc mismatch');
  });

  it('zeroed sectors inside the last record (a later sector present, an earlier one not): torn, says so, dropped', async () => {
    const { fs, path, offsets } = await buildLog(5, (i) => (i === 5 ? 3000 : 100));
    const first = (Math.floor(offsets[4]! / 512) + 1) * 512;
    fs.bytes(path).fill(0, first, first + 1024); // two sectors in the middle; the record's last sectors are present
    const { wal, state, logs } = await reopen(fs);
    expect(state.entries.map((e) => e.index)).toEqual([1, 2, 3, 4]);
    expect(logs.find((l) => l.includes('torn tail'))).toContain(`CRC mismatch; torn write: its part in the sector at offset ${first} is all zeros (never written)`);
    await wal.close();
  });
});

describe('zeroed tail and junk (W3)', () => {
  it('junk after the last valid record is cleared before appending', async () => {
    const { fs, path, offsets } = await buildLog(3, () => 50);
    const end = offsets[2]! + 16 + 56 + 8;
    const bytes = fs.bytes(path);
    for (let i = end + 40; i < end + 400; i++) bytes[i] = (i * 31) & 0xff;
    const { wal, state, logs } = await reopen(fs);
    expect(state.entries.map((e) => e.index)).toEqual([1, 2, 3]);
    expect(logs.find((l) => l.includes('torn tail'))).toContain('junk after the last record; torn write: an all-zero record header with data after it');
    expect(fs.bytes(path).subarray(end + 40, end + 400).every((b) => b === 0)).toBe(true);
    await wal.close();
  });

  it('a log that ends in preallocated zeros opens without repair', async () => {
    const { fs } = await buildLog(3, () => 50);
    const { wal, state, logs } = await reopen(fs);
    expect(state.entries).toHaveLength(3);
    expect(logs.some((l) => l.includes('torn'))).toBe(false);
    await wal.close();
  });
});

describe('absurd lengths (W4)', () => {
  it('a huge length in a middle record is a clean corruption error with no big allocation', async () => {
    const { fs, path, offsets } = await buildLog(6, () => 100);
    new DataView(fs.bytes(path).buffer).setUint32(offsets[2]!, 0xfffffff0, true);
    const before = process.memoryUsage().arrayBuffers;
    const err = await openError(fs);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(32 * 1024 * 1024);
    expect(err.message).toContain(path);
    expect(err.offset).toBe(offsets[2]);
    expect(err.reason).toContain('exceeds the limit');
  });

  it('a length past the end of a non-last segment is corruption', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, { fs, profile: 'ssd', tuning: { segmentBytes: 4096, preallocate: false, batchBytesMax: 2048 } });
    for (let i = 1; i <= 20; i++) await wal.save({ entries: [entry(i, 400)] });
    await wal.close();
    const first = (await fs.list(dir)).filter((x) => parseSegmentName(x)).sort()[0]!;
    const bytes = fs.bytes(`${dir}/${first}`);
    new DataView(bytes.buffer).setUint32(segmentHeaderBytes, bytes.length, true);
    const err = await openError(fs);
    expect(err.file).toBe(`${dir}/${first}`);
    expect(err.reason).toContain('past the end');
    expect(err.reason).toContain('not a torn write: the segment is not the last one');
  });

  it('a length past the end in the last batch is a torn tail', async () => {
    const { fs, path, offsets } = await buildLog(3, () => 100, false);
    new DataView(fs.bytes(path).buffer).setUint32(offsets[2]!, 1_000_000, true);
    const { wal, state } = await reopen(fs, false);
    expect(state.entries.map((e) => e.index)).toEqual([1, 2]);
    await wal.close();
  });
});

describe('mid-log corruption (W5)', () => {
  it('a CRC mismatch in a middle record refuses to start, names file and offset, and changes nothing', async () => {
    const { fs, path, offsets } = await buildLog(6, () => 100);
    fs.bytes(path)[offsets[3]! + 16 + 20]! ^= 0x01;
    const snapshot = fs.bytes(path).slice();
    const err = await openError(fs);
    expect(err.message).toContain(`${path} at offset ${offsets[3]}`);
    expect(err.reason).toContain('CRC mismatch in a complete record (walpb: crc mismatch)');
    expect(Buffer.from(fs.bytes(path)).equals(Buffer.from(snapshot))).toBe(true);
    await openError(fs); // still refuses: nothing was truncated
  });

  it('a zeroed page in the middle of synced data is corruption, not an end of log', async () => {
    const { fs, path, offsets } = await buildLog(20, () => 600);
    const page = Math.ceil(offsets[3]! / 4096) * 4096;
    fs.bytes(path).fill(0, page, page + 4096);
    const err = await openError(fs);
    expect(err.file).toBe(path);
    expect(err.reason).toContain('not a torn write: records of a later batch follow, so its batch was synced');
  });

  it('a missing middle segment is corruption', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, { fs, profile: 'ssd', tuning: { segmentBytes: 4096, preallocate: false, batchBytesMax: 2048 } });
    for (let i = 1; i <= 30; i++) await wal.save({ entries: [entry(i, 400)] });
    await wal.close();
    const names = (await fs.list(dir)).filter((x) => parseSegmentName(x)).sort();
    expect(names.length).toBeGreaterThan(3);
    await fs.unlink(`${dir}/${names[1]}`);
    const err = await openError(fs);
    expect(err.reason).toContain('missing');
  });
});

describe('segment rotation (W10)', () => {
  it('after a crash at any step, every segment name has a complete header', async () => {
    const tuning = { segmentBytes: 4096, preallocate: true, batchBytesMax: 2048 };
    const full = new SimFs();
    await runWorkload((await Wal.open(dir, { fs: full, profile: 'ssd', tuning })).wal, 11, 30);
    let checked = 0;
    for (let n = 1; n <= full.ops; n++) {
      const fs = new SimFs({ crashAfterOp: n });
      await Wal.open(dir, { fs, profile: 'ssd', tuning })
        .then((r) => runWorkload(r.wal, 11, 30))
        .catch(() => undefined);
      const image = fs.crashImage();
      for (const name of await image.list(dir).catch(() => [] as string[])) {
        const parsed = parseSegmentName(name);
        if (!parsed) continue;
        checkSegmentHeader((await image.readFile(`${dir}/${name}`))!, name, parsed.seq);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(full.ops);
  });
});

describe('release only behind a durable snapshot (W11)', () => {
  it('refuses to release beyond the durable snapshot', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, opts(fs));
    await wal.save({ entries: [entry(1, 10), entry(2, 10)], hardState: { term: 1, vote: 1n, commit: 2 } });
    expect(() => wal.releaseTo(1)).toThrow(/beyond the durable snapshot/);
    await wal.saveSnapshot({ meta: { index: 1, term: 1, confState: { voters: [1n], learners: [] } }, data: Uint8Array.of(9) });
    expect(() => wal.releaseTo(2)).toThrow(/beyond the durable snapshot/);
    await wal.releaseTo(1);
    await wal.close();
  });

  it('released segments are gone and the log after the snapshot is intact', async () => {
    const fs = new SimFs();
    const tuning = { segmentBytes: 4096, preallocate: false, batchBytesMax: 2048 };
    const { wal } = await Wal.open(dir, { fs, profile: 'ssd', tuning });
    for (let i = 1; i <= 40; i++) await wal.save({ entries: [entry(i, 300)], hardState: { term: 1, vote: 2n, commit: i } });
    const before = (await fs.list(dir)).filter((x) => parseSegmentName(x)).length;
    await wal.saveSnapshot({ meta: { index: 30, term: 1, confState: { voters: [1n, 2n], learners: [3n] } }, data: Uint8Array.of(1, 2, 3) });
    await wal.releaseTo(30);
    const after = (await fs.list(dir)).filter((x) => parseSegmentName(x)).length;
    expect(after).toBeLessThan(before);
    expect(wal.metrics.segmentsReleased).toBe(before - after);
    await wal.close();
    const { wal: w2, state } = await Wal.open(dir, { fs, profile: 'ssd', tuning });
    expect(state.snapshot).toEqual({ index: 30, term: 1, confState: { voters: [1n, 2n], learners: [3n] } });
    expect(state.entries.map((e) => e.index)).toEqual([31, 32, 33, 34, 35, 36, 37, 38, 39, 40]);
    expect(state.hardState).toEqual({ term: 1, vote: 2n, commit: 40 });
    expect([...(await state.loadSnapshot())!.data]).toEqual([1, 2, 3]);
    await w2.close();
  });

  it('a snapshot installed beyond the log discards the log', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, opts(fs));
    await wal.save({ entries: [entry(1, 10), entry(2, 10)] });
    await wal.save({ snapshotMeta: { index: 10, term: 3, confState: { voters: [1n], learners: [] } }, entries: [entry(11, 5, 3)] });
    await wal.close();
    const { wal: w2, state } = await reopen(fs);
    expect(state.snapshot.index).toBe(10);
    expect(state.entries.map((e) => e.index)).toEqual([11]);
    expect(await state.loadSnapshot()).toBeUndefined(); // meta only: the caller keeps that snapshot's data
    await w2.close();
  });

  it('a corrupt snapshot file is reported, not loaded', async () => {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, opts(fs));
    await wal.save({ entries: [entry(1, 10)], hardState: { term: 1, vote: 0n, commit: 1 } });
    await wal.saveSnapshot({ meta: { index: 1, term: 1, confState: { voters: [1n], learners: [] } }, data: new Uint8Array(100) });
    await wal.close();
    const snap = (await fs.list(dir)).find((x) => x.endsWith('.snap'))!;
    fs.bytes(`${dir}/${snap}`)[60]! ^= 0xff;
    const { wal: w2, state } = await reopen(fs);
    await expect(state.loadSnapshot()).rejects.toThrow(/snapshot CRC mismatch/);
    await w2.close();
  });
});

describe('recycled segments', () => {
  const tuning = { segmentBytes: 4096, preallocate: true, batchBytesMax: 2048, recycleSegmentsMax: 2, inlineWriteBytesMax: 0 };

  /** A log whose active segment is a recycled file still holding its previous life's records. */
  async function recycledLog(): Promise<{ fs: SimFs; path: string; lastIndex: number }> {
    const fs = new SimFs();
    const { wal } = await Wal.open(dir, { fs, profile: 'ssd', tuning });
    let i = 1;
    for (; i <= 30; i++) await wal.save({ entries: [entry(i, 300)], hardState: { term: 1, vote: 1n, commit: i } });
    await wal.saveSnapshot({ meta: { index: 30, term: 1, confState: { voters: [1n], learners: [] } }, data: Uint8Array.of(1) });
    await wal.releaseTo(30);
    const activePath = async (): Promise<string> => {
      const names = (await fs.list(dir)).filter((x) => parseSegmentName(x)).sort();
      return `${dir}/${names[names.length - 1]!}`;
    };
    const activeRecycled = async (): Promise<boolean> => {
      const path = await activePath();
      return checkSegmentHeader(fs.bytes(path), path, parseSegmentName(path.split('/').pop()!)!.seq);
    };
    for (; !(await activeRecycled()); i++) {
      expect(i).toBeLessThan(200);
      await wal.save({ entries: [entry(i, 300)], hardState: { term: 1, vote: 1n, commit: i } });
    }
    await wal.save({ entries: [entry(i, 20)], hardState: { term: 1, vote: 1n, commit: i } });
    await wal.close();
    return { fs, path: await activePath(), lastIndex: i };
  }

  it("a released segment smaller than the profile's is deleted, not kept as a spare nothing reuses (issue 32)", async () => {
    const MiB = 1024 * 1024;
    const fs = new SimFs();
    // The first segment is 1 MiB (walFirstSegmentBytes), the profile's 4 MiB: only the latter is recycled.
    const { wal } = await Wal.open(dir, { fs, profile: 'ssd', tuning: { ...tuning, segmentBytes: 4 * MiB, batchBytesMax: 64 * 1024 } });
    for (let i = 1; i <= 70; i++) await wal.save({ entries: [entry(i, 16 * 1024)], hardState: { term: 1, vote: 1n, commit: i } });
    await wal.saveSnapshot({ meta: { index: 70, term: 1, confState: { voters: [1n], learners: [] } }, data: Uint8Array.of(1) });
    await wal.releaseTo(70);
    const names = await fs.list(dir);
    expect(names.filter((n) => n.endsWith('.wal.spare'))).toEqual([]);
    expect(names.filter((n) => n.endsWith('.wal'))).toHaveLength(1);
    await wal.close();
  });

  it("a recycled segment's old records are never read back", async () => {
    const { fs, path, lastIndex } = await recycledLog();
    const bytes = fs.bytes(path);
    expect(checkSegmentHeader(bytes, path, parseSegmentName(path.split('/').pop()!)!.seq)).toBe(true);
    expect(bytes.subarray(bytes.length - 512).some((b) => b !== 0)).toBe(true); // previous life is still there
    const { wal, state, logs } = await reopen(fs);
    expect(state.entries.map((e) => e.index)).toEqual(Array.from({ length: lastIndex - 30 }, (_, k) => 31 + k));
    expect(logs.some((l) => l.includes('torn'))).toBe(false);
    await wal.close();
  });

  it('a bit flip in the last record of a recycled segment, lying in one sector, is corruption (its sector was written whole)', async () => {
    const { fs, path } = await recycledLog();
    const bytes = fs.bytes(path);
    const seq = parseSegmentName(path.split('/').pop()!)!.seq;
    const { records } = scanSegment(bytes, path, { seq, recycled: true, isLast: true, prevBatchSeq: undefined });
    const last = records[records.length - 1]!;
    const end = last.offset + 16 + last.payload.length;
    expect(Math.floor(last.offset / 512)).toBe(Math.floor((end - 1) / 512)); // one sector
    bytes[last.offset + 16 + 1]! ^= 0x04;
    const before = bytes.slice();
    const err = await openError(fs);
    expect(err.offset).toBe(last.offset);
    expect(err.reason).toContain('walpb: crc mismatch');
    expect(err.reason).toContain('it lies in one sector, and its header is of this life of the recycled segment');
    expect(Buffer.from(fs.bytes(path)).equals(Buffer.from(before))).toBe(true);
  });

  it('a CRC mismatch in the middle of a recycled segment is still corruption', async () => {
    const { fs, path } = await recycledLog();
    fs.bytes(path)[segmentHeaderBytes + 16 + 4]! ^= 0x10;
    const err = await openError(fs);
    expect(err.file).toBe(path);
    expect(err.offset).toBe(segmentHeaderBytes);
  });
});
