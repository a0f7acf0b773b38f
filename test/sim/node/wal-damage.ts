/**
 * Damage to complete WAL records, as a crashed member's disk may show it (W5 and O3 in test/GLOSSARY.md; issue 25, item 2),
 * and the outcome the simulator requires: the member refuses to start with the WAL's WalCorruptError naming the
 * damage as written-then-changed, never "torn", and modifies nothing. A torn write (the last, unsynced write cut
 * short) is the crash model's business (server-node.ts crash()); here only records that are complete in the
 * crash image are hit: every frame from the segment header on that still validates, synced or not.
 *
 * Two kinds:
 * - `bitflip`: 1–4 bits flipped in a record's CRC-covered bytes (type, flags, batch sequence, CRC, payload;
 *   never the length field: a length stretched into the zeroed tail looks torn, a known limit of etcd's decoder
 *   and ours, src/wal/segment.ts). Half the time the record is one of the log's last batch, the case of issue 25
 *   item 2 (the last record before kill -9, followed by the zeroed preallocation).
 * - `zero-sector`: one 512-byte sector overlapping a record zeroed (a bad sector read back as zeros, a lost
 *   write of an old sector). A zero sector is the mark of a torn write, so it is damage, not a tear, only when
 *   records of a later batch follow it in the segment (only the last batch can be unsynced): the target is
 *   chosen so that they do.
 *
 * Where the WAL's rules cannot tell damage from a tear, nothing is injected (the expectation would be false):
 * in a recycled segment the sectors a torn write missed hold the previous life's bytes, so a bad frame in its
 * last batch is truncated by the batch rule; a bit flip there is injected only when a later batch follows.
 */
import type { Prng } from '../../../src/base/prng.js';
import { WalCorruptError } from '../../../src/wal/errors.js';
import { readFrame } from '../../../src/wal/record.js';
import { checkSegmentHeader, parseSegmentName, sectorBytes, segmentHeaderBytes, segmentSalt, zeroSectorPart } from '../../../src/wal/segment.js';
import type { SimFs } from '../../wal/sim-fs.js';

export type WalDamageKind = 'bitflip' | 'zero-sector';

export interface WalDamage {
  kind: WalDamageKind;
  file: string;
  /** The damaged record's offset, and where the damage is. */
  recordOffset: number;
  at: number;
  /** Whether the damaged record belongs to the log's last batch (the case a "torn tail" rule would drop). */
  lastBatch: boolean;
  /** The WAL files' bytes after the damage: a refusal must leave them as they are. */
  image: Map<string, Uint8Array>;
}

interface Frame {
  offset: number;
  end: number;
  batchSeq: number;
}

interface Segment {
  file: string;
  buf: Uint8Array;
  recycled: boolean;
  frames: Frame[];
}

/** The complete records of every segment, in order (a frame that does not validate ends a segment's walk). */
async function segments(fs: SimFs, dir: string): Promise<Segment[]> {
  const out: Segment[] = [];
  const names = (await fs.list(dir)).map((f) => ({ f, n: parseSegmentName(f) })).filter((x) => x.n !== undefined);
  names.sort((a, b) => a.n!.seq - b.n!.seq);
  for (const { f, n } of names) {
    const buf = fs.bytes(`${dir}/${f}`);
    let recycled: boolean;
    try {
      recycled = checkSegmentHeader(buf, f, n!.seq);
    } catch {
      continue;
    }
    const salt = segmentSalt(n!.seq);
    const frames: Frame[] = [];
    for (let offset = segmentHeaderBytes; ; ) {
      const fr = readFrame(buf, offset, buf.length, salt);
      if (fr.kind !== 'record') break;
      frames.push({ offset, end: offset + 16 + fr.payload.length, batchSeq: fr.batchSeq });
      offset = fr.next;
    }
    out.push({ file: f, buf, recycled, frames });
  }
  return out;
}

/** Flip bits of one complete record, or zero one sector under one; undefined when no record qualifies. */
export async function damageWal(fs: SimFs, dir: string, kind: WalDamageKind, rng: Prng): Promise<WalDamage | undefined> {
  const segs = await segments(fs, dir);
  const last = segs.at(-1);
  const lastSeq = last?.frames.at(-1)?.batchSeq;
  const laterBatch = (s: Segment, i: number, seq: number): boolean => s.frames.slice(i + 1).some((f) => f.batchSeq !== seq);
  const candidates: { s: Segment; i: number; lastBatch: boolean }[] = [];
  for (const s of segs) {
    s.frames.forEach((f, i) => {
      const lastBatch = s === last && f.batchSeq === lastSeq;
      const ok = kind === 'bitflip' ? !s.recycled || laterBatch(s, i, f.batchSeq) : laterBatch(s, i, f.batchSeq) && f.end > sectorBytes;
      if (ok) candidates.push({ s, i, lastBatch });
    });
  }
  if (candidates.length === 0) return undefined;
  const inLast = candidates.filter((c) => c.lastBatch);
  const pool = kind === 'bitflip' && inLast.length > 0 && rng.int(2) === 0 ? inLast : candidates;
  const { s, i, lastBatch } = pool[rng.int(pool.length)]!;
  const f = s.frames[i]!;
  const image = (at: number): WalDamage => {
    fs.persistBytes(`${dir}/${s.file}`);
    return { kind, file: s.file, recordOffset: f.offset, at, lastBatch, image: new Map(segs.map((x) => [x.file, x.buf.slice()])) };
  };
  if (kind === 'bitflip') {
    // Bytes 4.. of the header (type, flags, reserved, batch seq, CRC) and the payload: all under the CRC.
    const span = f.end - f.offset - 4;
    const at = f.offset + 4 + rng.int(span);
    const before = s.buf.slice(f.offset, f.end);
    for (let n = 1 + rng.int(4), k = 0; k < n; k++) {
      const byte = Math.min(f.end - 1, at + rng.int(4));
      s.buf[byte]! ^= 1 << rng.int(8);
    }
    // A flip that left a sector's part of the record all zero would be the mark of a tear: undo it and skip.
    if (s.buf.slice(f.offset, f.end).every((b, j) => b === before[j]) || zeroSectorPart(s.buf, f.offset, f.end) !== undefined) {
      s.buf.set(before, f.offset);
      return undefined;
    }
    return image(at);
  }
  // A sector overlapping the record, past the segment header's sector, before the last later-batch record.
  const first = Math.max(1, Math.floor(f.offset / sectorBytes));
  const lastLater = s.frames.filter((g) => g.batchSeq !== f.batchSeq).at(-1)!;
  const sectors: number[] = [];
  for (let sec = first; sec * sectorBytes < f.end; sec++) if ((sec + 1) * sectorBytes <= lastLater.offset) sectors.push(sec);
  if (sectors.length === 0) return undefined;
  const at = sectors[rng.int(sectors.length)]! * sectorBytes;
  s.buf.fill(0, at, at + sectorBytes);
  return image(at);
}

/**
 * The member's start with damaged records must have been refused as damage: undefined if so, else what went
 * wrong. `files` are the WAL's bytes after the refusal.
 */
export function refusalProblem(d: WalDamage, started: boolean, error: unknown, files: Map<string, Uint8Array>): string | undefined {
  const what = `${d.kind} at ${d.file}:${d.at} (record at ${d.recordOffset}${d.lastBatch ? ', of the last batch' : ''})`;
  if (started) return `the member started on a WAL with a ${what}: a complete record was dropped instead of refused`;
  if (!(error instanceof WalCorruptError)) return `the member with a ${what} failed to start, but not with WalCorruptError: ${String(error)}`;
  const named = /not torn|not a torn write|walpb: crc mismatch|not a record header/.test(error.reason);
  if (!named) return `the refusal of a ${what} does not say it was damage, not a torn write: ${error.message}`;
  for (const [file, bytes] of d.image) {
    const now = files.get(file);
    if (now === undefined || Buffer.compare(now, bytes) !== 0) return `the refused open of a WAL with a ${what} modified ${file}`;
  }
  return undefined;
}
