/**
 * The key index, saved so a start does not scan every revision in the backend (a scan reads every value:
 * start time would grow with value bytes). Written at a clean stop and, while the member runs, by the
 * background keeper (main/index-checkpoint-keeper.ts) so a crash scans only the tail written after it. It is
 * a cache of what the backend holds up to its cut (`lastCode`): usable when the backend has reached the
 * consistent index it was cut at and no compaction passed it; the revisions after the cut are then scanned.
 *
 * Format: frames `[u32 payload length][u32 crc32c of payload][payload]`, little-endian. The first frame is
 * the header; then frames of whole entries; the last frame is the trailer (the entry count).
 *   header:  magic "ETCIDX02", consistentIndex, term, currentRev, compactRev, lastCode, keys (f64 each)
 *            (keys: the index's size at the cut, a hint for allocation; the trailer's count is the truth)
 *   entry:   u32 key length, key, u32 revision count, codes (f64 each), createRevision, version (f64), lease (i64)
 *            version -1: the key was written after the cut while the checkpoint was taken, so its create
 *            revision, version and lease at the cut are not known here: the loader reads them from the value
 *            of its last put (one backend get per such key, a handful)
 *   trailer: magic "ETCIDXEND", keys (f64)
 * ETCIDX01 (exact-match checkpoints, no unknown versions) is refused: the start scans.
 */
import { assert } from '../base/assert.js';
import { crc32c } from '../base/crc32c.js';
import type { KeyIndex } from './key-index.js';
import { keyText } from './key-text.js';

export interface IndexCheckpointHeader {
  consistentIndex: number;
  term: number;
  currentRev: number;
  compactRev: number;
  lastCode: number;
  keys: number;
}

export interface IndexCheckpointEntry {
  /** The key's latin1 text (key-text.ts), as the index keeps it. */
  key: string;
  revs: number[];
  createRevision: number;
  version: number;
  lease: bigint;
}

/** A damaged or foreign checkpoint: the caller falls back to scanning the backend. */
export class IndexCheckpointError extends Error {}

const headerMagic = new TextEncoder().encode('ETCIDX02');
const formerMagics = ['ETCIDX01'].map((m) => new TextEncoder().encode(m));
/** An entry's version when its metadata at the cut is not known (see the format above). */
export const versionUnknown = -1;
const trailerMagic = new TextEncoder().encode('ETCIDXEND');
const frameHeaderBytes = 8;
/** Entries are packed into frames of about this size (one larger entry gets a frame of its own). */
const frameBytesTarget = 1024 * 1024;
/** A frame longer than this is corruption, not a frame (bounds the allocation a damaged length could ask). */
const frameBytesMax = 64 * 1024 * 1024;

function entryBytes(ki: KeyIndex): number {
  return 4 + ki.text.length + 4 + 8 * ki.revisionCount + 8 + 8 + 8;
}

class FrameWriter {
  #buf: Uint8Array;
  #view: DataView;
  #pos = frameHeaderBytes;

  constructor(capacity: number) {
    this.#buf = new Uint8Array(frameHeaderBytes + capacity);
    this.#view = new DataView(this.#buf.buffer);
  }

  get payloadBytes(): number {
    return this.#pos - frameHeaderBytes;
  }

  room(): number {
    return this.#buf.length - this.#pos;
  }

  bytes(b: Uint8Array): void {
    this.#buf.set(b, this.#pos);
    this.#pos += b.length;
  }

  /** A key's latin1 text as its bytes (key-text.ts), without an intermediate array. */
  latin1(text: string): void {
    for (let i = 0; i < text.length; i++) this.#buf[this.#pos + i] = text.charCodeAt(i);
    this.#pos += text.length;
  }

  u32(n: number): void {
    this.#view.setUint32(this.#pos, n, true);
    this.#pos += 4;
  }

  f64(n: number): void {
    this.#view.setFloat64(this.#pos, n, true);
    this.#pos += 8;
  }

  i64(n: bigint): void {
    this.#view.setBigInt64(this.#pos, n, true);
    this.#pos += 8;
  }

  finish(): Uint8Array {
    const frame = this.#buf.subarray(0, this.#pos);
    this.#view.setUint32(0, this.#pos - frameHeaderBytes, true);
    this.#view.setUint32(4, crc32c(frame, 0, frameHeaderBytes), true);
    return frame;
  }
}

/**
 * The checkpoint as frames. `cut`: only revisions ≤ it are written (keys with none are left out), and a key
 * with revisions past it gets version -1. `keys` is walked lazily, one frame per pull, so a caller that pulls
 * between turns of the event loop sees the index as it is at each pull: keys(after) must return keys in
 * order strictly after `after` (undefined at first), as it finds them then; each such batch ends a frame.
 */
export function* encodeIndexCheckpoint(header: IndexCheckpointHeader, keys: (after: string | undefined) => KeyIndex[]): Generator<Uint8Array> {
  const cut = header.lastCode;
  const head = new FrameWriter(headerMagic.length + 6 * 8);
  head.bytes(headerMagic);
  for (const n of [header.consistentIndex, header.term, header.currentRev, header.compactRev, header.lastCode, header.keys]) head.f64(n);
  yield head.finish();
  let frame = new FrameWriter(frameBytesTarget);
  let count = 0;
  let after: string | undefined;
  for (;;) {
    const batch = keys(after);
    if (batch.length === 0) break;
    after = batch[batch.length - 1]!.text;
    for (const ki of batch) {
      let revisions = ki.revisionCount;
      while (revisions > 0 && ki.revisionAt(revisions - 1) > cut) revisions--;
      if (revisions === 0) continue;
      const need = entryBytes(ki);
      if (need > frame.room()) {
        if (frame.payloadBytes > 0) yield frame.finish();
        frame = new FrameWriter(Math.max(frameBytesTarget, need));
      }
      frame.u32(ki.text.length);
      frame.latin1(ki.text);
      frame.u32(revisions);
      for (let i = 0; i < revisions; i++) frame.f64(ki.revisionAt(i));
      const known = revisions === ki.revisionCount;
      frame.f64(known ? ki.createRevision : 0);
      frame.f64(known ? ki.version : versionUnknown);
      frame.i64(known ? ki.lease : 0n);
      count++;
    }
    // A frame per walk step: the caller's pull is where the index may change.
    if (frame.payloadBytes > 0) {
      yield frame.finish();
      frame = new FrameWriter(frameBytesTarget);
    }
  }
  if (frame.payloadBytes > 0) yield frame.finish();
  const tail = new FrameWriter(trailerMagic.length + 8);
  tail.bytes(trailerMagic);
  tail.f64(count);
  yield tail.finish();
}

function startsWith(b: Uint8Array, magic: Uint8Array): boolean {
  if (b.length < magic.length) return false;
  for (let i = 0; i < magic.length; i++) if (b[i] !== magic[i]) return false;
  return true;
}

/**
 * Reads a checkpoint stream (chunks of any size). The header is returned first so the caller can decide
 * whether the checkpoint is current before reading the rest; then entries, in key order.
 */
export class IndexCheckpointReader {
  readonly #chunks: AsyncIterator<Uint8Array>;
  #pending: Uint8Array = new Uint8Array(0);
  #header: IndexCheckpointHeader | undefined;

  constructor(chunks: AsyncIterable<Uint8Array>) {
    this.#chunks = chunks[Symbol.asyncIterator]();
  }

  async #fill(n: number): Promise<boolean> {
    while (this.#pending.length < n) {
      const next = await this.#chunks.next();
      if (next.done) return false;
      const joined = new Uint8Array(this.#pending.length + next.value.length);
      joined.set(this.#pending);
      joined.set(next.value, this.#pending.length);
      this.#pending = joined;
    }
    return true;
  }

  async #frame(): Promise<DataView> {
    if (!(await this.#fill(frameHeaderBytes))) throw new IndexCheckpointError('index checkpoint ends before its trailer');
    const head = new DataView(this.#pending.buffer, this.#pending.byteOffset, frameHeaderBytes);
    const length = head.getUint32(0, true);
    const crc = head.getUint32(4, true);
    if (length > frameBytesMax) throw new IndexCheckpointError(`index checkpoint frame of ${length} bytes`);
    if (!(await this.#fill(frameHeaderBytes + length))) throw new IndexCheckpointError('index checkpoint frame cut short');
    const payload = this.#pending.subarray(frameHeaderBytes, frameHeaderBytes + length);
    if (crc32c(payload) !== crc) throw new IndexCheckpointError('index checkpoint frame checksum mismatch');
    this.#pending = this.#pending.subarray(frameHeaderBytes + length);
    return new DataView(payload.buffer, payload.byteOffset, payload.length);
  }

  async header(): Promise<IndexCheckpointHeader> {
    const v = await this.#frame();
    const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    if (formerMagics.some((m) => startsWith(bytes, m))) throw new IndexCheckpointError('an index checkpoint of an older format');
    if (!startsWith(bytes, headerMagic) || v.byteLength !== headerMagic.length + 6 * 8) throw new IndexCheckpointError('not an index checkpoint');
    const f = (i: number): number => v.getFloat64(headerMagic.length + 8 * i, true);
    this.#header = { consistentIndex: f(0), term: f(1), currentRev: f(2), compactRev: f(3), lastCode: f(4), keys: f(5) };
    return this.#header;
  }

  /** Every entry, then checks the trailer. Keys are copied out as text (never views of a frame). */
  async *entries(): AsyncIterable<IndexCheckpointEntry> {
    assert(this.#header !== undefined, 'read the header first');
    let count = 0;
    for (;;) {
      const v = await this.#frame();
      const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
      if (startsWith(bytes, trailerMagic) && v.byteLength === trailerMagic.length + 8) {
        const keys = v.getFloat64(trailerMagic.length, true);
        if (keys !== count) throw new IndexCheckpointError(`index checkpoint holds ${count} keys, trailer says ${keys}`);
        return;
      }
      let pos = 0;
      const need = (n: number): void => {
        if (pos + n > v.byteLength) throw new IndexCheckpointError('index checkpoint entry cut short');
      };
      while (pos < v.byteLength) {
        need(4);
        const keyLength = v.getUint32(pos, true);
        need(4 + keyLength + 4);
        const key = keyText(bytes.subarray(pos + 4, pos + 4 + keyLength));
        pos += 4 + keyLength;
        const n = v.getUint32(pos, true);
        pos += 4;
        need(8 * n + 24);
        const revs = new Array<number>(n);
        for (let i = 0; i < n; i++) revs[i] = v.getFloat64(pos + 8 * i, true);
        pos += 8 * n;
        const createRevision = v.getFloat64(pos, true);
        const version = v.getFloat64(pos + 8, true);
        const lease = v.getBigInt64(pos + 16, true);
        pos += 24;
        count++;
        yield { key, revs, createRevision, version, lease };
      }
    }
  }
}
