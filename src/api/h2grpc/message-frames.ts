/**
 * gRPC's message framing over HTTP/2 DATA: each message is a 1-byte compressed flag, a 4-byte big-endian
 * length, then the bytes. DATA chunks split and join messages freely, so a reader reassembles them.
 *
 * Worked example (max 16): chunks [00 00 00 00 03 61] [62 63 00 00] [00 00 00] yield "abc" after the second
 * chunk, then an empty message after the third; a header announcing 17 bytes fails at once, before any of
 * the 17 bytes are buffered (grpc-js' StreamDecoder does the same and its message is kept).
 */

/** A message the reader refuses: larger than the limit, or compressed (we accept identity only). */
export class FrameError extends Error {
  constructor(readonly kind: 'tooLarge' | 'compressed', message: string) {
    super(message);
  }
}

const headerBytes = 5;

export class MessageReader {
  readonly #messageBytesMax: number;
  /** Bytes of the current message's header seen so far (allocated only for a header split across chunks). */
  #header: Buffer | undefined;
  #headerSeen = 0;
  /** The body being filled (undefined while reading a header). */
  #body: Buffer | undefined;
  #bodySeen = 0;

  constructor(messageBytesMax: number) {
    this.#messageBytesMax = messageBytesMax;
  }

  /** Every message completed by `chunk`, in order; throws FrameError on a message it refuses. */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.#body === undefined) {
        // Fast path: a whole message in what is left of the chunk, and no header pending.
        if (this.#headerSeen === 0 && chunk.length - at >= headerBytes) {
          const length = this.#checkHeader(chunk[at]!, chunk.readUInt32BE(at + 1));
          if (chunk.length - at - headerBytes >= length) {
            out.push(chunk.subarray(at + headerBytes, at + headerBytes + length));
            at += headerBytes + length;
            continue;
          }
          this.#startBody(length);
          at += headerBytes;
          continue;
        }
        const n = Math.min(headerBytes - this.#headerSeen, chunk.length - at);
        const header = (this.#header ??= Buffer.allocUnsafe(headerBytes));
        chunk.copy(header, this.#headerSeen, at, at + n);
        this.#headerSeen += n;
        at += n;
        if (this.#headerSeen < headerBytes) break;
        this.#headerSeen = 0;
        const length = this.#checkHeader(header[0]!, header.readUInt32BE(1));
        this.#startBody(length);
      }
      const body = this.#body!;
      const n = Math.min(body.length - this.#bodySeen, chunk.length - at);
      chunk.copy(body, this.#bodySeen, at, at + n);
      this.#bodySeen += n;
      at += n;
      if (this.#bodySeen === body.length) {
        out.push(body);
        this.#body = undefined;
      }
    }
    if (this.#body !== undefined && this.#body.length === 0) {
      out.push(this.#body);
      this.#body = undefined;
    }
    return out;
  }

  /** Whether a message is partly read (a half-close then is a truncated message). */
  get partial(): boolean {
    return this.#headerSeen > 0 || this.#body !== undefined;
  }

  #checkHeader(flag: number, length: number): number {
    if (flag !== 0) throw new FrameError('compressed', 'Received message compressed with unsupported encoding "identity"');
    if (length > this.#messageBytesMax) {
      throw new FrameError('tooLarge', `Received message larger than max (${length} vs ${this.#messageBytesMax})`);
    }
    return length;
  }

  #startBody(length: number): void {
    this.#body = Buffer.allocUnsafe(length);
    this.#bodySeen = 0;
  }
}

/** One message framed for the wire, in one buffer (one write per message on the HTTP/2 stream). */
export function frameMessage(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(headerBytes + bytes.length);
  out[0] = 0;
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, headerBytes);
  return out;
}
