/**
 * Splits a client's HTTP/2 byte stream (the preface, then frames) for the :authority repair (authority-fix.ts).
 *
 * Linear in the bytes it is fed: chunks are kept in a list and joined once per frame, when the frame is
 * complete (as src/peer/frame.ts's reader does). Joining the buffer with every chunk instead copied a frame
 * again for each piece of it: a 16 MB DATA frame sent in 256-byte writes cost ~3 s of the member's CPU
 * (issue 31, item 5). A frame's length field has 24 bits, so one frame holds at most 16 MiB + 9 bytes.
 * Small chunks are first copied side by side into a staging buffer, so a client writing a byte at a time
 * costs a byte copy per byte, not a list entry and a Buffer.concat part (4 MiB in 1-byte chunks: ~60 ms
 * instead of ~400 ms). Only what arrived is held: the length a frame header announces is not allocated.
 */

const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const frameHeaderBytes = 9;
/** Chunks shorter than this are copied into the staging buffer instead of being listed. */
const smallChunkBytes = 256;
const stagingBytes = 16 * 1024;
const noFrames: readonly Frame[] = Object.freeze([]);

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
  /** The whole frame, header included, as it arrived. */
  raw: Buffer;
}

export class FrameReader {
  /** The bytes since the last complete frame: `#chunks`, then `#staging[#stagedFrom, #stagedTo)`. */
  #chunks: Buffer[] = [];
  #buffered = 0;
  #staging = Buffer.allocUnsafe(0);
  #stagedFrom = 0;
  #stagedTo = 0;
  /** Bytes the next frame needs in all: its header until that is in, then header and payload. */
  #need = frameHeaderBytes;
  #prefixChunks: Buffer[] = [];
  #prefixLeft = preface.length;
  #prefix: Buffer | undefined;

  /** The bytes before the first frame as read so far: the client's preface once it has all arrived. */
  get prefix(): Buffer {
    if (this.#prefix === undefined) {
      const joined = Buffer.concat(this.#prefixChunks);
      this.#prefixChunks = [joined];
      if (this.#prefixLeft > 0) return joined;
      this.#prefix = joined;
    }
    return this.#prefix;
  }

  /** Whether the bytes before the first frame are all in and are not HTTP/2's client preface. */
  get notHttp2(): boolean {
    return this.#prefixLeft === 0 && !this.prefix.equals(preface);
  }

  /** Feeds bytes; returns the frames they complete. */
  push(chunk: Buffer): readonly Frame[] {
    if (this.#prefixLeft > 0) {
      const n = Math.min(this.#prefixLeft, chunk.length);
      this.#prefixChunks.push(chunk.subarray(0, n));
      this.#prefixLeft -= n;
      chunk = chunk.subarray(n);
    }
    if (chunk.length < smallChunkBytes) this.#stage(chunk);
    else {
      this.#unstage();
      this.#chunks.push(chunk);
    }
    this.#buffered += chunk.length;
    if (this.#buffered < this.#need) return noFrames;
    const frames: Frame[] = [];
    for (;;) {
      const frame = this.#next();
      if (frame === undefined) return frames;
      frames.push(frame);
    }
  }

  /** The bytes past the last complete frame, handed out once (the reader is empty afterwards). */
  takeRest(): Buffer {
    const rest = this.#joined();
    this.#chunks = [];
    this.#buffered = 0;
    this.#need = frameHeaderBytes;
    return rest;
  }

  #next(): Frame | undefined {
    if (this.#buffered < this.#need) return undefined;
    // #need is the header's size until the header is read (an empty frame reads it and completes in one go).
    if (this.#need === frameHeaderBytes) {
      const head = this.#joined();
      this.#chunks = [head];
      this.#need = frameHeaderBytes + head.readUIntBE(0, 3);
      if (this.#buffered < this.#need) return undefined;
    }
    const joined = this.#joined();
    const raw = joined.subarray(0, this.#need);
    const rest = joined.subarray(this.#need);
    this.#chunks = rest.length > 0 ? [rest] : [];
    this.#buffered = rest.length;
    this.#need = frameHeaderBytes;
    return { type: raw[3]!, flags: raw[4]!, streamId: raw.readUInt32BE(5) & 0x7fffffff, payload: raw.subarray(frameHeaderBytes), raw };
  }

  /** Everything buffered as one Buffer (a copy only when it is in more than one piece). */
  #joined(): Buffer {
    this.#unstage();
    return this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#buffered);
  }

  /** A small chunk, copied after the last one (a loop, not Buffer.set: for a few bytes the call costs more than the copy). */
  #stage(chunk: Buffer): void {
    if (this.#stagedTo + chunk.length > this.#staging.length) return this.#restage(chunk);
    const to = this.#staging;
    let at = this.#stagedTo;
    for (let i = 0; i < chunk.length; i++) to[at++] = chunk[i]!;
    this.#stagedTo = at;
  }

  /** A small chunk that does not fit what is left of the staging buffer: a fresh one, starting with it. */
  #restage(chunk: Buffer): void {
    this.#unstage();
    this.#staging = Buffer.allocUnsafe(stagingBytes);
    chunk.copy(this.#staging);
    this.#stagedFrom = 0;
    this.#stagedTo = chunk.length;
  }

  /** Lists what is staged; the staging buffer is never written below #stagedTo again (the list points into it). */
  #unstage(): void {
    if (this.#stagedTo === this.#stagedFrom) return;
    this.#chunks.push(this.#staging.subarray(this.#stagedFrom, this.#stagedTo));
    this.#stagedFrom = this.#stagedTo;
  }
}
