/**
 * The segment files of an open WAL: the active segment being appended to, the pipeline that prepares the
 * next one off the hot path (etcd's filePipeline), rotation, and release of old segments.
 *
 * Rotation (W10): the next segment is created as `<seq>.wal.tmp`, its header written, zero-filled to its full
 * size when preallocating, fsynced; at rotation it is renamed to its final name and the directory fsynced
 * before the first batch goes into it. A crash leaves either no name or a name with a complete header.
 *
 * Recycling: with preallocation on, up to recycleSegmentsMax released segments are kept as spares
 * (`<seq>.wal.spare`) and reused for new segments instead of zero-filling fresh files: only a new header is
 * written. Zero-filling costs one byte written per byte of log (measured: ~7% of the bytes written per
 * record by a lone appender), which flash wear should not pay twice. Old records in a recycled file never
 * validate again: record CRCs are seeded with the segment's sequence number (segment.ts).
 *
 * Sizes (issue 12, item 10): a new log's first segment is small (walFirstSegmentBytes), so a new member
 * does not zero-fill 64 MiB before it serves; the next ones have the profile's size, prepared in the
 * background, but never more than half the free space (halving down to walSegmentBytesMin): a small disk
 * gets smaller segments instead of a failed preallocation. A preallocation that fails leaves no temp file.
 */
import { assert } from '../base/index.js';
import { walFirstSegmentBytes, walSegmentBytesMin } from '../base/limits.js';
import { WalFatalError, WalNoSpaceError } from './errors.js';
import type { FilePort, FsPort } from './fs-port.js';
import type { WalTuning } from './profiles.js';
import { encodeSegmentHeader, segmentFileName, segmentHeaderBytes, segmentSalt, segmentSpareName, segmentTempName } from './segment.js';

export interface LiveSegment {
  name: string;
  seq: number;
  /** Highest entry index written in the segment (0 when none): it may be released once a snapshot covers it. */
  maxIndex: number;
}

interface Prepared {
  file: FilePort;
  tmpPath: string;
  seq: number;
  bytes: number;
}

/**
 * Zero-fill in page-sized writes. Measured on Linux 6.18 ext4: buffered writes of 1 MiB create 1 MiB page-cache
 * folios, and re-dirtying one byte of such a folio is accounted (in /proc/<pid>/io write_bytes) as the whole
 * folio, so every sync looked like a 1 MiB write (the device itself wrote ~4.5 KB either way). 4 KiB writes
 * keep 4 KiB folios and an honest per-process count, at the cost of more (background) syscalls.
 */
const zeroFillChunk = new Uint8Array(4096);
/**
 * With inline writes (the ssd profile), the zero-fill writes on the loop's thread too, this many pages per
 * event-loop turn (0.3 ms median, 4.5 ms worst: src/wal/README.md): through the thread pool, its 16,384
 * writes per 64 MiB segment (each a promise and a round trip) were ~10% of the loop's busy time while a new
 * member served its first puts.
 */
const zeroFillPagesPerTurn = 64;

export class SegmentLog {
  readonly #fs: FsPort;
  readonly #dir: string;
  #tuning: WalTuning;
  readonly #onBackgroundError: (err: unknown) => void;
  readonly #segments: LiveSegment[];
  #active: FilePort | undefined;
  /** The active segment's size: appends past it rotate. */
  #activeBytes: number;
  #pos: number;
  readonly #log: (line: string) => void;
  #next: Promise<Prepared> | undefined;
  /** The last preparation found no space: the next try is at rotation, not at every write. */
  #prepareFailed = false;
  #salt: number;
  readonly #spares: string[];
  preallocatedBytes = 0;
  segmentsRecycled = 0;
  segmentsCreated = 0;
  segmentsReleased = 0;

  constructor(
    fs: FsPort,
    dir: string,
    tuning: WalTuning,
    opened: { segments: LiveSegment[]; active: FilePort | undefined; pos: number; spares: string[]; activeBytes: number },
    onBackgroundError: (err: unknown) => void,
    log: (line: string) => void = () => {},
  ) {
    this.#fs = fs;
    this.#dir = dir;
    this.#tuning = tuning;
    this.#segments = opened.segments;
    this.#active = opened.active;
    this.#pos = opened.pos;
    this.#activeBytes = tuning.preallocate ? Math.max(opened.activeBytes, opened.pos) : tuning.segmentBytes;
    this.#log = log;
    this.#spares = [...opened.spares];
    const last = opened.segments[opened.segments.length - 1];
    this.#salt = last === undefined ? 0 : segmentSalt(last.seq);
    this.#onBackgroundError = onBackgroundError;
  }

  get segments(): readonly LiveSegment[] {
    return this.#segments;
  }

  /**
   * A recalibrated profile's knobs (profile-calibration.ts): inline writes from the next write on, the
   * segment size for segments prepared from now on (one already prepared keeps its size; spares of the old
   * size are deleted, not recycled, as on a short disk).
   */
  retune(tuning: WalTuning): void {
    this.#tuning = tuning;
  }

  /** CRC seed of the active segment's records. */
  get salt(): number {
    return this.#salt;
  }

  /** True when a batch of up to `bytes` does not fit and the active segment already holds records. */
  needsRotation(bytes: number): boolean {
    if (this.#active === undefined) return true;
    return this.#pos > segmentHeaderBytes && this.#pos + bytes > this.#activeBytes;
  }

  /** Starts preparing the next segment in the background (idempotent). */
  prepareNext(): void {
    if (this.#next !== undefined) return;
    const last = this.#segments[this.#segments.length - 1];
    const seq = last === undefined ? 0 : last.seq + 1;
    const next = this.#prepare(seq);
    this.#next = next;
    next.catch((err: unknown) => {
      // A full disk is not the log's failure: nothing was written to a live segment, the temp file is gone.
      // The active segment still has room; the rotation tries once more (issue 32), and only that is fatal.
      if (isNoSpace(err)) {
        if (this.#next === next) this.#next = undefined;
        this.#prepareFailed = true;
        this.#log(`wal: ${this.#dir}: no space to prepare the next segment (${String(err)}); trying again at rotation`);
        return;
      }
      // Any other failure is reported at once (it is fatal) and again to whoever awaits the segment.
      this.#onBackgroundError(err);
    });
  }

  async #prepare(seq: number): Promise<Prepared> {
    const tmpPath = `${this.#dir}/${segmentTempName(seq)}`;
    const recycled = await this.#recycle(seq, tmpPath);
    if (recycled) return recycled;
    return this.#create(seq, tmpPath, await this.#fittingBytes());
  }

  /** The profile's segment size, halved while it would take more than half the free space. */
  async #fittingBytes(): Promise<number> {
    const wanted = this.#tuning.segmentBytes;
    if (!this.#tuning.preallocate) return wanted;
    const free = await this.#fs.freeBytes?.(this.#dir);
    let bytes = wanted;
    while (free !== undefined && bytes > walSegmentBytesMin && 2 * bytes > free) bytes = Math.max(walSegmentBytesMin, Math.floor(bytes / 2 / 4096) * 4096);
    if (bytes !== wanted) this.#log(`wal: ${this.#dir}: ${mib(free ?? 0)} free; preparing a ${mib(bytes)} segment instead of ${mib(wanted)}`);
    return bytes;
  }

  async #create(seq: number, tmpPath: string, bytes: number): Promise<Prepared> {
    const file = await this.#fs.open(tmpPath, 'create');
    try {
      const header = encodeSegmentHeader(seq, false);
      await file.write(header, header.length, 0);
      if (this.#tuning.preallocate) await this.#zeroFill(file, bytes);
      await file.sync();
    } catch (err) {
      // Never leave a half-filled temp file on a full disk.
      await file.close().catch(() => undefined);
      await this.#fs.unlink(tmpPath).catch(() => undefined);
      throw err;
    }
    return { file, tmpPath, seq, bytes };
  }

  /** Whether a write of `bytes` goes on the loop's thread (WalTuning.inlineWriteBytesMax). */
  #writesNow(file: FilePort, bytes: number): boolean {
    return file.writeNow !== undefined && bytes <= this.#tuning.inlineWriteBytesMax;
  }

  async #zeroFill(file: FilePort, bytes: number): Promise<void> {
    const inline = this.#writesNow(file, zeroFillChunk.length);
    let pages = 0;
    for (let at = segmentHeaderBytes; at < bytes; at += zeroFillChunk.length) {
      const n = Math.min(zeroFillChunk.length, bytes - at);
      if (!inline) await file.write(zeroFillChunk, n, at);
      else {
        file.writeNow!(zeroFillChunk, n, at);
        if (++pages % zeroFillPagesPerTurn === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      }
      this.preallocatedBytes += n;
    }
  }

  /**
   * The first segment of a new log: small, so a new member serves at once (the next one, full-size, is
   * prepared in the background). A disk without room even for it is a WalNoSpaceError, with nothing left.
   */
  async createFirst(firstIndex: number): Promise<void> {
    assert(this.#segments.length === 0 && this.#next === undefined, 'the log already has segments');
    const bytes = this.#tuning.preallocate ? Math.min(walFirstSegmentBytes, this.#tuning.segmentBytes) : this.#tuning.segmentBytes;
    const free = await this.#fs.freeBytes?.(this.#dir);
    if (free !== undefined && this.#tuning.preallocate && free < bytes) throw new WalNoSpaceError(this.#dir, bytes);
    const prepared = this.#create(0, `${this.#dir}/${segmentTempName(0)}`, bytes).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code === 'ENOSPC') throw new WalNoSpaceError(this.#dir, bytes);
      throw new WalFatalError('first segment creation', err);
    });
    this.#next = prepared;
    await this.rotate(firstIndex);
  }

  /** A spare of the right size, renamed to the temp name, with a new header; undefined when none. */
  async #recycle(seq: number, tmpPath: string): Promise<Prepared | undefined> {
    for (;;) {
      const spare = this.#spares.shift();
      if (spare === undefined) return undefined;
      await this.#fs.rename(spare, tmpPath);
      const file = await this.#fs.open(tmpPath, 'existing');
      const bytes = await file.size();
      if (bytes !== this.#tuning.segmentBytes) {
        await file.close();
        await this.#fs.unlink(tmpPath);
        continue;
      }
      const header = encodeSegmentHeader(seq, true);
      await file.write(header, header.length, 0);
      await file.datasync();
      this.segmentsRecycled++;
      return { file, tmpPath, seq, bytes };
    }
  }

  /** Resolves once the next segment is prepared (or its preparation failed, which is reported as fatal). */
  async whenPrepared(): Promise<void> {
    await this.#next?.catch(() => undefined);
  }

  /** Puts the prepared segment in place as the active one; its first entry index is recorded in its name. */
  async rotate(firstIndex: number): Promise<void> {
    this.#prepareFailed = false;
    this.prepareNext();
    let next: Prepared;
    try {
      next = await this.#next!;
    } catch (err) {
      // Prepared ahead on a disk that was full then: once more now (the disk watch may have made room).
      if (!isNoSpace(err)) throw err;
      this.#next = undefined;
      this.prepareNext();
      next = await this.#next!;
    }
    this.#next = undefined;
    const name = segmentFileName(next.seq, firstIndex);
    await this.#fs.rename(next.tmpPath, `${this.#dir}/${name}`);
    await this.#fs.syncDir(this.#dir);
    const previous = this.#active;
    this.#active = next.file;
    this.#activeBytes = this.#tuning.preallocate ? next.bytes : this.#tuning.segmentBytes;
    this.#pos = segmentHeaderBytes;
    this.#salt = segmentSalt(next.seq);
    this.#segments.push({ name, seq: next.seq, maxIndex: 0 });
    this.segmentsCreated++;
    // The previous segment's data was synced with its last batch; it is only closed here.
    if (previous !== undefined) await previous.close();
  }

  /**
   * One write of a whole batch at the end of the active segment. Undefined when it was written at once on the
   * loop's thread (inline, the common case): no promise to create and await per batch (issue 34); otherwise
   * resolves once written through the thread pool.
   */
  write(bytes: Uint8Array, maxIndex: number): Promise<void> | undefined {
    const active = this.#active;
    assert(active !== undefined, 'no active segment');
    if (!this.#writesNow(active, bytes.length)) return active.write(bytes, bytes.length, this.#pos).then(() => this.#written(bytes.length, maxIndex));
    active.writeNow!(bytes, bytes.length, this.#pos);
    this.#written(bytes.length, maxIndex);
    return undefined;
  }

  #written(length: number, maxIndex: number): void {
    this.#pos += length;
    // Prepare the next segment only once this one is half full: zero-filling a fresh 64 MiB file is 16k page
    // writes on the thread pool, which a member that just started (or a short-lived one) should not pay
    // while it serves; half a segment of log leaves plenty of time to finish before rotation.
    if (this.#pos > this.#activeBytes / 2 && !this.#prepareFailed) this.prepareNext();
    const seg = this.#segments[this.#segments.length - 1]!;
    seg.maxIndex = Math.max(seg.maxIndex, maxIndex);
  }

  datasync(): Promise<void> {
    assert(this.#active !== undefined, 'no active segment');
    return this.#active.datasync();
  }

  /**
   * Deletes the oldest segments while every entry in them is ≤ index, never the active one. One at a time,
   * each unlink made durable before the next, so a crash leaves a contiguous suffix of segments.
   */
  async release(index: number): Promise<number> {
    let released = 0;
    while (this.#segments.length > 1 && this.#segments[0]!.maxIndex <= index) {
      const { name, seq } = this.#segments[0]!;
      if (this.#tuning.preallocate && this.#spares.length < this.#tuning.recycleSegmentsMax && (await this.#recyclable(`${this.#dir}/${name}`))) {
        const spare = `${this.#dir}/${segmentSpareName(seq)}`;
        await this.#fs.rename(`${this.#dir}/${name}`, spare);
        this.#spares.push(spare);
      } else {
        await this.#fs.unlink(`${this.#dir}/${name}`);
      }
      await this.#fs.syncDir(this.#dir);
      this.#segments.shift();
      released++;
      this.segmentsReleased++;
    }
    return released;
  }

  /**
   * Only a segment of the profile's size is ever recycled (#recycle): a smaller one, prepared on a short disk,
   * is deleted at once rather than kept as a spare that holds space nothing will reuse (issue 32: on a
   * 64 MiB disk two such spares held up to half of it).
   */
  async #recyclable(path: string): Promise<boolean> {
    const file = await this.#fs.open(path, 'existing');
    try {
      return (await file.size()) === this.#tuning.segmentBytes;
    } finally {
      await file.close();
    }
  }

  async close(): Promise<void> {
    const next = this.#next;
    this.#next = undefined;
    if (next !== undefined) {
      // A prepared but unused segment stays a .tmp file, removed at the next open.
      const prepared = await next.catch(() => undefined);
      await prepared?.file.close();
    }
    await this.#active?.close();
    this.#active = undefined;
  }
}

function isNoSpace(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'ENOSPC';
}

function mib(bytes: number): string {
  return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`;
}
