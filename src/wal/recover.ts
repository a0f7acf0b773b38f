/**
 * Recovery at open: read every segment in order, scan and replay it, and repair a torn tail of the last one.
 * Nothing is modified until the whole log has been read and replayed without finding corruption, and a torn
 * tail is cleared only if the log without it still holds every committed entry.
 */
import { WalCorruptError } from './errors.js';
import type { FilePort, FsPort } from './fs-port.js';
import { Replayer, type ReplayResult } from './replay.js';
import type { LiveSegment } from './segment-log.js';
import { checkSegmentHeader, parseSegmentName, scanSegment, segmentHeaderBytes } from './segment.js';

export interface Recovered {
  replay: ReplayResult;
  segments: LiveSegment[];
  /** The last segment, open for appending (undefined in an empty directory). */
  active: FilePort | undefined;
  pos: number;
  lastBatchSeq: number | undefined;
  /** Released segments kept for reuse. */
  spares: string[];
}

/** What one write of a torn tail's clearing covers: allocated for that repair only, not held by every member. */
const zerosBytes = 1024 * 1024;

/** What reading the log found, before anything is modified. */
export interface Scanned {
  replay: ReplayResult;
  segments: LiveSegment[];
  lastBatchSeq: number | undefined;
  spares: string[];
  /** Temp files (a segment being prepared, a snapshot being written, the sync probe): never referenced. */
  temps: string[];
  /** A torn tail of the last segment: [end, extent) is cleared before appends resume. */
  repair: { end: number; extent: number; reason: string } | undefined;
  end: number;
}

/** `appliedIndex`: an index the state machine already applied (so committed): the log must reach it. */
export async function recover(fs: FsPort, dir: string, log: (line: string) => void, appliedIndex = 0): Promise<Recovered> {
  const { replay, segments, lastBatchSeq, spares, temps, repair, end } = await scanLog(fs, dir, appliedIndex);
  for (const name of temps) await fs.unlink(`${dir}/${name}`);
  const last = segments[segments.length - 1];
  if (last === undefined) return { replay, segments, active: undefined, pos: segmentHeaderBytes, lastBatchSeq, spares };
  const active = await fs.open(`${dir}/${last.name}`, 'existing');
  if (repair !== undefined) {
    // W2/W3: clear the torn batch with zeros (keeping the preallocated size) so appends resume on a clean tail.
    log(`wal: ${last.name}: torn tail at offset ${repair.end} (${repair.reason}): an unfinished write, never acknowledged; clearing ${repair.extent - repair.end} bytes`);
    const zeros = new Uint8Array(Math.min(zerosBytes, repair.extent - repair.end));
    for (let at = repair.end; at < repair.extent; at += zeros.length) {
      await active.write(zeros, Math.min(zeros.length, repair.extent - at), at);
    }
    await active.datasync();
  }
  return { replay, segments, active, pos: end, lastBatchSeq, spares };
}

/**
 * Reads and checks the whole log and modifies nothing: what recovery would keep, or the WalCorruptError it
 * would refuse with. A start runs this before it opens anything for writing, so a refused start leaves every
 * file as it was (issue 32, item 2).
 */
export async function scanLog(fs: FsPort, dir: string, appliedIndex = 0): Promise<Scanned> {
  const names = await fs.list(dir);
  const temps = names.filter((n) => n.endsWith('.tmp'));
  const spares = names.filter((n) => n.endsWith('.wal.spare')).map((n) => `${dir}/${n}`);
  const found = names
    .map((name) => ({ name, parsed: parseSegmentName(name) }))
    .filter((s): s is { name: string; parsed: { seq: number; firstIndex: number } } => s.parsed !== undefined)
    .sort((a, b) => a.parsed.seq - b.parsed.seq);

  const replayer = new Replayer();
  const segments: LiveSegment[] = [];
  let lastBatchSeq: number | undefined;
  let repair: { end: number; extent: number; reason: string } | undefined;
  let end = segmentHeaderBytes;
  for (let i = 0; i < found.length; i++) {
    const { name, parsed } = found[i]!;
    const path = `${dir}/${name}`;
    if (i > 0 && parsed.seq !== found[i - 1]!.parsed.seq + 1) {
      throw new WalCorruptError(path, 0, `segment ${found[i - 1]!.parsed.seq + 1} is missing before it`);
    }
    const buf = await fs.readFile(path);
    if (buf === undefined) throw new WalCorruptError(path, 0, 'segment vanished during recovery');
    const recycled = checkSegmentHeader(buf, path, parsed.seq);
    const isLast = i === found.length - 1;
    const scanned = scanSegment(buf, path, { seq: parsed.seq, recycled, isLast, prevBatchSeq: lastBatchSeq });
    if (scanned.tornAt !== undefined) {
      repair = { end: scanned.end, extent: scanned.tornAt.clearTo, reason: scanned.tornAt.reason };
    }
    const maxIndex = replayer.add(scanned);
    segments.push({ name, seq: parsed.seq, maxIndex });
    lastBatchSeq = scanned.lastBatchSeq ?? lastBatchSeq;
    end = scanned.end;
  }
  const replay = replayer.finish();
  refuseLostCommit(replay, appliedIndex, repair === undefined ? undefined : { file: `${dir}/${found[found.length - 1]!.name}`, offset: repair.end });
  return { replay, segments, lastBatchSeq, spares, temps, repair, end };
}

/**
 * A torn tail is safe to drop only if it held nothing committed: a write that never finished was never
 * acknowledged. If the log without it ends below the durable commit index, a record that was synced (and
 * acknowledged) is damaged, not torn: refuse before anything is modified, and say what the operator can do.
 */
function refuseLostCommit(replay: ReplayResult, appliedIndex: number, tear: { file: string; offset: number } | undefined): void {
  const last = replay.snapshot.index + replay.entries.length;
  const committed = Math.max(replay.hardState.commit, appliedIndex);
  if (committed <= last) return;
  const where = tear ?? { file: 'the log', offset: 0 };
  const known = appliedIndex > replay.hardState.commit ? `the backend already applied index ${appliedIndex}` : `its hard state says ${committed} are committed`;
  throw new WalCorruptError(
    where.file,
    where.offset,
    `committed entries are missing (the readable log ends at index ${last}, ${known}), ` +
      'so the damaged record is not a torn write; the log was left as it is',
  );
}
