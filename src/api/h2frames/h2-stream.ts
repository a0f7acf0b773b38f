/**
 * One HTTP/2 stream of our gRPC server (RFC 9113 §5.1, server side): the request's headers, the client's DATA
 * handed to the call (or held while the call is paused), and the response: headers, gRPC messages as DATA,
 * trailers with END_STREAM. What may be sent is bounded by the stream's and the connection's send windows
 * and by the socket's buffer (StreamHost.socketFull); what does not fit waits here until the connection calls
 * flush() (a WINDOW_UPDATE, a SETTINGS change, the socket's 'drain').
 *
 * A unary OK response is one socket write: HEADERS, DATA and the trailers' HEADERS built into one buffer
 * (node:http2 needs two writes a loop turn apart, its trailers going out from a setImmediate).
 *
 * States: open → half-closed (remote) on the client's END_STREAM → closed when we end too; ending first (a
 * server that answers before the client's half-close) resets the stream NO_ERROR, as grpc-go does, so the
 * client stops sending. A client's RST_STREAM, or the connection's end, closes it at once.
 */
import { defaultWindowBytes, flag, frameHeaderBytes, frameType, rstStreamFrame, errorCode, writeFrameHeader } from './frame-format.js';
import { okTrailersBlock, responseHeadersBlock } from './response-headers.js';

/** A request's headers as Node gives them: a name sent twice has its values in an array. */
export type RequestHeaders = Record<string, string | string[] | undefined>;

/** What a stream needs of its connection. */
export interface StreamHost {
  /** The client's SETTINGS_MAX_FRAME_SIZE. */
  readonly peerFrameBytesMax: number;
  /** What the connection may still send (the client's connection window); streams take from it. */
  connectionSendWindow: number;
  /** The socket buffers enough: stream data waits (unary responses do not). */
  readonly socketFull: boolean;
  write(bytes: Buffer): void;
  /** The stream has data waiting for a window or the socket: flush it later. */
  blocked(stream: H2Stream): void;
  /** The call took `bytes` of DATA: the windows may be granted back. */
  consumed(stream: H2Stream, bytes: number): void;
  closed(stream: H2Stream): void;
}

const grpcMessageHeaderBytes = 5;

export class H2Stream {
  readonly id: number;
  readonly headers: RequestHeaders;
  /** The call's hooks. onClose's argument: the stream ended before we sent our END_STREAM (a cancel). */
  onData: ((chunk: Buffer) => void) | undefined = undefined;
  onEnd: (() => void) | undefined = undefined;
  onClose: ((cut: boolean) => void) | undefined = undefined;
  onDrain: (() => void) | undefined = undefined;
  /** The client's window for this stream; negative after a SETTINGS decrease (§6.9.2). */
  sendWindow: number;
  /** What the client may still send on this stream (the connection keeps it). */
  receiveWindow = defaultWindowBytes;
  /** Bytes the call took since the last stream WINDOW_UPDATE. */
  unackedBytes = 0;
  remoteEnded = false;
  #localEnded = false;
  #closed = false;
  #headersSent = false;
  #paused = false;
  #held: Buffer[] = [];
  #heldEnd = false;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** The trailers' frame(s), sent once the pending data is. */
  #pendingTrailers: Buffer | undefined;
  #wantsDrain = false;
  readonly #host: StreamHost;

  constructor(host: StreamHost, id: number, headers: RequestHeaders, sendWindow: number) {
    this.#host = host;
    this.id = id;
    this.headers = headers;
    this.sendWindow = sendWindow;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get headersSent(): boolean {
    return this.#headersSent;
  }

  /** Whether we sent END_STREAM (or reset). */
  get localEnded(): boolean {
    return this.#localEnded;
  }

  // --- the call's side -----------------------------------------------------------------------------------

  sendHeaders(): void {
    if (this.#headersSent || this.#localEnded || this.#closed) return;
    this.#headersSent = true;
    this.#host.write(headersFrames(this.id, responseHeadersBlock, false, this.#host.peerFrameBytesMax));
  }

  /**
   * The whole unary OK: headers, the message, trailers. One buffer and one write when the windows allow
   * (always, for messages under 64 KiB on a fresh stream); else the message queues behind the windows.
   */
  respondUnary(message: Uint8Array): void {
    if (this.#localEnded || this.#closed) return;
    const dataBytes = grpcMessageHeaderBytes + message.length;
    const host = this.#host;
    if (this.#headersSent || this.#pendingBytes > 0 || dataBytes > Math.min(this.sendWindow, host.connectionSendWindow, host.peerFrameBytesMax)) {
      this.sendHeaders();
      this.writeMessage(message);
      return this.end(okTrailersBlock);
    }
    this.#headersSent = true;
    const headersBytes = responseHeadersBlock.length;
    const trailersBytes = okTrailersBlock.length;
    const out = Buffer.allocUnsafe(3 * frameHeaderBytes + headersBytes + dataBytes + trailersBytes);
    let at = 0;
    writeFrameHeader(out, at, headersBytes, frameType.headers, flag.endHeaders, this.id);
    at += frameHeaderBytes;
    responseHeadersBlock.copy(out, at);
    at += headersBytes;
    writeFrameHeader(out, at, dataBytes, frameType.data, 0, this.id);
    at += frameHeaderBytes;
    out[at] = 0;
    out.writeUInt32BE(message.length, at + 1);
    out.set(message, at + grpcMessageHeaderBytes);
    at += dataBytes;
    writeFrameHeader(out, at, trailersBytes, frameType.headers, flag.endHeaders | flag.endStream, this.id);
    okTrailersBlock.copy(out, at + frameHeaderBytes);
    this.sendWindow -= dataBytes;
    host.connectionSendWindow -= dataBytes;
    host.write(out);
    this.#localEnd();
  }

  /** One gRPC message as DATA; false when it (or earlier data) waits: onDrain follows. */
  writeMessage(message: Uint8Array): boolean {
    if (this.#localEnded || this.#closed) return false;
    this.sendHeaders();
    const host = this.#host;
    const dataBytes = grpcMessageHeaderBytes + message.length;
    if (this.#pendingBytes === 0 && !host.socketFull && dataBytes <= Math.min(this.sendWindow, host.connectionSendWindow, host.peerFrameBytesMax)) {
      const out = Buffer.allocUnsafe(frameHeaderBytes + dataBytes);
      writeFrameHeader(out, 0, dataBytes, frameType.data, 0, this.id);
      out[frameHeaderBytes] = 0;
      out.writeUInt32BE(message.length, frameHeaderBytes + 1);
      out.set(message, frameHeaderBytes + grpcMessageHeaderBytes);
      this.sendWindow -= dataBytes;
      host.connectionSendWindow -= dataBytes;
      host.write(out);
      if (!host.socketFull) return true;
      this.#wantsDrain = true;
      host.blocked(this);
      return false;
    }
    const framed = Buffer.allocUnsafe(dataBytes);
    framed[0] = 0;
    framed.writeUInt32BE(message.length, 1);
    framed.set(message, grpcMessageHeaderBytes);
    this.#pending.push(framed);
    this.#pendingBytes += dataBytes;
    this.flush();
    if (this.#pendingBytes === 0 && !host.socketFull) return true;
    this.#wantsDrain = true;
    host.blocked(this);
    return false;
  }

  /**
   * Ends the response with a trailers block (status), after any data still waiting; before any headers it
   * is a trailers-only response and `block` must hold the response headers too (trailersOnlyBlock).
   */
  end(block: Buffer): void {
    if (this.#localEnded || this.#closed || this.#pendingTrailers !== undefined) return;
    if (!this.#headersSent) {
      this.#headersSent = true;
      this.#host.write(headersFrames(this.id, block, true, this.#host.peerFrameBytesMax));
      return this.#localEnd();
    }
    this.#pendingTrailers = headersFrames(this.id, block, true, this.#host.peerFrameBytesMax);
    this.flush();
  }

  /** Ends the stream at once (RST_STREAM); nothing more is sent or delivered. */
  reset(code: number): void {
    if (this.#closed) return;
    this.#localEnded = true;
    this.#host.write(rstStreamFrame(this.id, code));
    this.#close(false);
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    const held = this.#held;
    this.#held = [];
    for (const chunk of held) {
      if (this.#closed || this.#paused) {
        // Paused again (or gone) by the call while taking these: keep the rest, in order.
        if (!this.#closed) this.#held.push(chunk);
        continue;
      }
      this.#deliver(chunk);
    }
    if (this.#heldEnd && !this.#paused && !this.#closed && this.#held.length === 0) {
      this.#heldEnd = false;
      this.#remoteEnd();
    }
  }

  // --- the connection's side -----------------------------------------------------------------------------

  /** DATA from the client (padding already taken off and accounted by the connection). */
  receiveData(chunk: Buffer, endStream: boolean): void {
    if (this.#paused) {
      if (chunk.length > 0) this.#held.push(chunk);
      if (endStream) this.#heldEnd = true;
      return;
    }
    if (chunk.length > 0) this.#deliver(chunk);
    if (endStream && !this.#closed) this.#remoteEnd();
  }

  /** The client's END_STREAM on a HEADERS frame (a request without a body, or trailers). */
  receiveEnd(): void {
    this.receiveData(emptyChunk, true);
  }

  /** The client's RST_STREAM, or the connection is gone. */
  cut(): void {
    this.#close(!this.#localEnded);
  }

  /** Sends what the windows and the socket allow now; then the trailers; then tells a waiting writer. */
  flush(): void {
    const host = this.#host;
    while (this.#pendingBytes > 0) {
      const allowed = Math.min(this.sendWindow, host.connectionSendWindow, host.peerFrameBytesMax);
      if (allowed <= 0 || host.socketFull) return host.blocked(this);
      const n = Math.min(allowed, this.#pendingBytes);
      const out = Buffer.allocUnsafe(frameHeaderBytes + n);
      writeFrameHeader(out, 0, n, frameType.data, 0, this.id);
      this.#take(out, frameHeaderBytes, n);
      this.sendWindow -= n;
      host.connectionSendWindow -= n;
      host.write(out);
    }
    if (this.#pendingTrailers !== undefined) {
      const trailers = this.#pendingTrailers;
      this.#pendingTrailers = undefined;
      host.write(trailers);
      return this.#localEnd();
    }
    if (this.#wantsDrain && !host.socketFull) {
      this.#wantsDrain = false;
      this.onDrain?.();
    } else if (this.#wantsDrain) host.blocked(this);
  }

  /** Moves `n` pending bytes into `out` at `at`. */
  #take(out: Buffer, at: number, n: number): void {
    this.#pendingBytes -= n;
    while (n > 0) {
      const head = this.#pending[0]!;
      if (head.length <= n) {
        head.copy(out, at);
        at += head.length;
        n -= head.length;
        this.#pending.shift();
      } else {
        head.copy(out, at, 0, n);
        this.#pending[0] = head.subarray(n);
        n = 0;
      }
    }
  }

  #deliver(chunk: Buffer): void {
    this.#host.consumed(this, chunk.length);
    this.onData?.(chunk);
  }

  #remoteEnd(): void {
    this.remoteEnded = true;
    this.onEnd?.();
    if (this.#localEnded) this.#close(false);
  }

  #localEnd(): void {
    this.#localEnded = true;
    if (this.remoteEnded) return this.#close(false);
    // We answered before the client's half-close: it need not send the rest (grpc-go: RST_STREAM NO_ERROR).
    this.#host.write(rstStreamFrame(this.id, errorCode.noError));
    this.#close(false);
  }

  #close(cut: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#held = [];
    this.#host.closed(this);
    this.onClose?.(cut);
  }
}

const emptyChunk = Buffer.alloc(0);

/** A header block as HEADERS (+ CONTINUATION when it exceeds the client's frame size), in one buffer. */
export function headersFrames(streamId: number, block: Buffer, endStream: boolean, frameBytesMax: number): Buffer {
  const endFlag = endStream ? flag.endStream : 0;
  if (block.length <= frameBytesMax) {
    const out = Buffer.allocUnsafe(frameHeaderBytes + block.length);
    writeFrameHeader(out, 0, block.length, frameType.headers, flag.endHeaders | endFlag, streamId);
    block.copy(out, frameHeaderBytes);
    return out;
  }
  const frames = Math.ceil(block.length / frameBytesMax);
  const out = Buffer.allocUnsafe(frames * frameHeaderBytes + block.length);
  let at = 0;
  for (let i = 0; i < frames; i++) {
    const part = block.subarray(i * frameBytesMax, (i + 1) * frameBytesMax);
    const last = i === frames - 1;
    writeFrameHeader(out, at, part.length, i === 0 ? frameType.headers : frameType.continuation, (last ? flag.endHeaders : 0) | (i === 0 ? endFlag : 0), streamId);
    part.copy(out, at + frameHeaderBytes);
    at += frameHeaderBytes + part.length;
  }
  return out;
}
