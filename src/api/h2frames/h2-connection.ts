/**
 * The server side of one HTTP/2 connection (RFC 9113), for gRPC only: we read the client's frames ourselves
 * and build ours, instead of node:http2 (nghttp2 plus a Duplex per stream), which was ~80 % of our CPU per call
 * (issue 34, bench/results/2026-12-06-h43-h2-response-path.md).
 *
 * What it does:
 * - the preface: the client's 24 bytes and its SETTINGS first; ours (SETTINGS, a WINDOW_UPDATE raising the
 *   connection window) at once, since grpc-go waits for them before its first request;
 * - streams: a client-initiated odd id above every earlier one opens a stream (its HEADERS, CONTINUATION to
 *   END_HEADERS, HPACK-decoded with one decoder per connection), handed to `onStream`; over
 *   SETTINGS_MAX_CONCURRENT_STREAMS: RST_STREAM REFUSED_STREAM;
 * - flow control both ways: the client's DATA is held to our windows (more: FLOW_CONTROL_ERROR) and granted
 *   back as calls take it, half a window at a time; ours follows the client's windows and SETTINGS;
 * - PING answered, our keepalive pings (a ping unanswered in time closes the connection), the client's pings
 *   judged by the PingPolicy; GOAWAY on close (graceful) or on a protocol error (then the connection ends);
 * - writes of one loop turn leave in one writev (the socket is corked until the turn's nextTick).
 * Limits: the handshake (preface and SETTINGS) within h2HandshakeMs, frames up to 16 KiB (our
 * SETTINGS_MAX_FRAME_SIZE, the default), a header block and list up to
 * h2HeaderListBytesMax, control answers up to h2ControlBufferedBytesMax unread, and a new stream only while
 * less than that of our answers is unread. Against floods (flood-guard.ts): streams reset by the client
 * before our answer or refused by us (rapid reset), and frames that do no work, are counted; too many of
 * either is GOAWAY ENHANCE_YOUR_CALM and the connection ends. Everything else HTTP/2 has
 * (priorities, push, trailers from the client) is accepted and ignored, or refused as the RFC says.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  clientPreface,
  defaultFrameBytesMax,
  defaultWindowBytes,
  errorCode,
  flag,
  frameBytesLimit,
  frameHeaderBytes,
  frameType,
  goAwayFrame,
  pingFrame,
  rstStreamFrame,
  settingId,
  settingsAck,
  settingsFrame,
  windowBytesLimit,
  windowUpdateFrame,
} from './frame-format.js';
import { HpackDecoder, HpackError } from './hpack.js';
import { H2Stream, headersFrames, type RequestHeaders, type StreamHost } from './h2-stream.js';
import { IdleFrameBudget, StreamResetWindow } from './flood-guard.js';
import { httpStatusBlock } from './response-headers.js';
import type { PingPolicy } from '../h2grpc/ping-policy.js';
import {
  h2ConnectionWindowBytes,
  h2ControlBufferedBytesMax,
  h2HandshakeMs,
  h2HeaderListBytesMax,
  h2IdleFramesMax,
  h2IdleFramesRefund,
  h2ResetEpochStreams,
  h2ResetStreamsMax,
  h2SocketBufferedBytesHigh,
} from '../../base/limits.js';

export interface H2ConnectionOptions {
  /** SETTINGS_MAX_CONCURRENT_STREAMS; undefined: unlimited (etcd's default). */
  concurrentStreamsMax: number | undefined;
  /** Server pings every this often (0: none), each to be answered within keepAliveTimeoutMs. */
  keepAliveIntervalMs: number;
  keepAliveTimeoutMs: number;
  /** The client ping floor, or undefined when not enforced. */
  pingPolicy: PingPolicy | undefined;
  /** A stream's request headers are in. */
  onStream(stream: H2Stream, connection: H2Connection): void;
  /** How long the client has for its preface and first SETTINGS (tests shorten it); h2HandshakeMs by default. */
  handshakeMs?: number;
}

/** How long a GOAWAY for a protocol error has to leave before the socket is destroyed. */
const goAwayFlushMs = 100;
const pingPayloadBytes = 8;

class ConnectionError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

export class H2Connection implements StreamHost {
  readonly socket: Duplex;
  peerFrameBytesMax = defaultFrameBytesMax;
  connectionSendWindow = defaultWindowBytes;
  readonly #options: H2ConnectionOptions;
  readonly #streams = new Map<number, H2Stream>();
  readonly #decoder = new HpackDecoder(h2HeaderListBytesMax);
  /** The client's SETTINGS_INITIAL_WINDOW_SIZE: each new stream's send window. */
  #peerStreamWindow = defaultWindowBytes;
  /** Our receive windows: the connection's, and what each stream may still send us. */
  #receiveWindow = h2ConnectionWindowBytes;
  #unackedBytes = 0;
  #lastStreamId = 0;
  /** Bytes read that do not yet make a whole frame (a list, joined once the frame is complete). */
  #chunks: Buffer[] = [];
  #buffered = 0;
  #prefaceLeft = clientPreface.length;
  #sawSettings = false;
  /** Our SETTINGS was acknowledged: one ack is expected, more are idle frames. */
  #settingsAcked = false;
  #settingsApplied = 0;
  readonly #resets = new StreamResetWindow(h2ResetEpochStreams, h2ResetStreamsMax);
  readonly #idle = new IdleFrameBudget(h2IdleFramesMax, h2IdleFramesRefund);
  /** A header block being assembled: its stream, flags of its HEADERS, the fragments. */
  #block: { streamId: number; endStream: boolean; parts: Buffer[]; bytes: number } | undefined;
  readonly #blocked = new Set<H2Stream>();
  #corked = false;
  #goingAway = false;
  #ended = false;
  #pingTimer: NodeJS.Timeout | undefined;
  #handshakeTimer: NodeJS.Timeout | undefined;
  #pingSentAt: Buffer | undefined;
  readonly #closeListeners: (() => void)[] = [];

  constructor(socket: Duplex, options: H2ConnectionOptions) {
    this.socket = socket;
    this.#options = options;
    const settings: [number, number][] = [[settingId.maxHeaderListSize, h2HeaderListBytesMax], [settingId.enablePush, 0]];
    if (options.concurrentStreamsMax !== undefined) settings.push([settingId.maxConcurrentStreams, options.concurrentStreamsMax]);
    this.write(settingsFrame(settings));
    this.write(windowUpdateFrame(0, h2ConnectionWindowBytes - defaultWindowBytes));
    // Our writes are whole answers, batched per loop turn: Nagle's algorithm would hold one behind the
    // client's delayed ACK of the one before (~40 ms under load), as authority-fix.ts's handOver avoids too.
    (socket as Partial<Socket>).setNoDelay?.(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('drain', () => this.#flushBlocked());
    // A socket's errors end this connection only ('close' follows).
    socket.on('error', () => socket.destroy());
    socket.once('close', () => this.#onClose());
    if (options.keepAliveIntervalMs > 0) this.#schedulePing();
    // A client that connects and never finishes the handshake holds a socket for nothing (grpc-go's
    // ConnectionTimeout): it is closed, nothing said (it has not spoken HTTP/2 yet).
    this.#handshakeTimer = setTimeout(() => {
      if (!this.#sawSettings) this.destroy();
    }, options.handshakeMs ?? h2HandshakeMs);
    this.#handshakeTimer.unref();
  }

  get socketFull(): boolean {
    return this.socket.writableLength >= h2SocketBufferedBytesHigh;
  }

  get openStreams(): number {
    return this.#streams.size;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** `fn` runs once the socket is closed. */
  onceClosed(fn: () => void): void {
    if (this.#ended) return fn();
    this.#closeListeners.push(fn);
  }

  /** Queues bytes for the socket; a loop turn's writes leave together. */
  write(bytes: Buffer): void {
    if (this.#ended) return;
    if (!this.#corked) {
      this.#corked = true;
      this.socket.cork();
      process.nextTick(uncork, this);
    }
    this.socket.write(bytes);
  }

  /** @internal for the nextTick */
  uncork(): void {
    this.#corked = false;
    this.socket.uncork();
  }

  blocked(stream: H2Stream): void {
    this.#blocked.add(stream);
  }

  consumed(stream: H2Stream, bytes: number): void {
    this.#grantConnection(bytes);
    // A stream the client ended needs no more window.
    if (stream.remoteEnded) return;
    stream.unackedBytes += bytes;
    if (stream.unackedBytes >= defaultWindowBytes / 2) {
      this.write(windowUpdateFrame(stream.id, stream.unackedBytes));
      stream.receiveWindow += stream.unackedBytes;
      stream.unackedBytes = 0;
    }
  }

  closed(stream: H2Stream): void {
    // Answered (or reset by us): work done. A stream the client cut pays nothing back.
    if (stream.localEnded) this.#idle.refund();
    this.#streams.delete(stream.id);
    this.#blocked.delete(stream);
    this.#options.pingPolicy?.streamClosed();
    if (this.#goingAway && this.#streams.size === 0) this.#end();
  }

  /** Graceful close: GOAWAY NO_ERROR; open streams go on, new ones are refused; the socket ends after the last. */
  goAway(): void {
    if (this.#goingAway || this.#ended) return;
    this.#goingAway = true;
    this.write(goAwayFrame(this.#lastStreamId, errorCode.noError));
    if (this.#streams.size === 0) this.#end();
  }

  /** GOAWAY with `code` and the connection ends (a ping policy's too_many_pings, a protocol error). */
  fail(code: number, debug?: Buffer): void {
    if (this.#ended) return;
    this.#goingAway = true;
    this.write(goAwayFrame(this.#lastStreamId, code, debug));
    this.#end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  // --- reading --------------------------------------------------------------------------------------------

  #onData(chunk: Buffer): void {
    if (this.#ended) return;
    try {
      if (this.#prefaceLeft > 0) {
        chunk = this.#readPreface(chunk);
        if (chunk.length === 0) return;
      }
      this.#chunks.push(chunk);
      this.#buffered += chunk.length;
      this.#readFrames();
    } catch (err) {
      if (!(err instanceof ConnectionError)) throw err;
      this.fail(err.code, Buffer.from(err.message));
    }
  }

  #readPreface(chunk: Buffer): Buffer {
    const at = clientPreface.length - this.#prefaceLeft;
    const n = Math.min(this.#prefaceLeft, chunk.length);
    if (!chunk.subarray(0, n).equals(clientPreface.subarray(at, at + n))) throw new ConnectionError(errorCode.protocol, 'invalid connection preface');
    this.#prefaceLeft -= n;
    return chunk.subarray(n);
  }

  #readFrames(): void {
    while (this.#buffered >= frameHeaderBytes && !this.#ended) {
      let head = this.#chunks[0]!;
      if (head.length < frameHeaderBytes) head = this.#join();
      const length = (head[0]! << 16) | (head[1]! << 8) | head[2]!;
      if (length > defaultFrameBytesMax) throw new ConnectionError(errorCode.frameSize, `frame of ${length} bytes`);
      const total = frameHeaderBytes + length;
      if (this.#buffered < total) return;
      if (head.length < total) head = this.#join();
      const type = head[3]!;
      const flags = head[4]!;
      const streamId = head.readUInt32BE(5) & 0x7fffffff;
      const payload = head.subarray(frameHeaderBytes, total);
      if (head.length === total) this.#chunks.shift();
      else this.#chunks[0] = head.subarray(total);
      this.#buffered -= total;
      this.#frame(type, flags, streamId, payload);
    }
  }

  /** All buffered bytes in one buffer (called only when a frame spans chunks: the copy is of that frame). */
  #join(): Buffer {
    const joined = Buffer.concat(this.#chunks, this.#buffered);
    this.#chunks = [joined];
    return joined;
  }

  #frame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (!this.#sawSettings) {
      if (type !== frameType.settings || (flags & flag.ack) !== 0) throw new ConnectionError(errorCode.protocol, 'the preface must be followed by SETTINGS');
      this.#sawSettings = true;
      clearTimeout(this.#handshakeTimer);
    }
    if (this.#block !== undefined && (type !== frameType.continuation || streamId !== this.#block.streamId)) {
      throw new ConnectionError(errorCode.protocol, 'a header block was interrupted');
    }
    switch (type) {
      case frameType.data:
        return this.#onDataFrame(flags, streamId, payload);
      case frameType.headers:
        return this.#onHeaders(flags, streamId, payload);
      case frameType.priority:
        if (streamId === 0 || payload.length !== 5) throw new ConnectionError(errorCode.protocol, 'bad PRIORITY');
        return this.#idleFrame();
      case frameType.rstStream:
        return this.#onRstStream(streamId, payload);
      case frameType.settings:
        return this.#onSettings(flags, streamId, payload);
      case frameType.pushPromise:
        throw new ConnectionError(errorCode.protocol, 'PUSH_PROMISE from a client');
      case frameType.ping:
        return this.#onPing(flags, streamId, payload);
      case frameType.goAway:
        if (streamId !== 0) throw new ConnectionError(errorCode.protocol, 'GOAWAY on a stream');
        // The client stops opening streams; the open ones finish as they will. Nothing for us to do.
        return this.#idleFrame();
      case frameType.windowUpdate:
        return this.#onWindowUpdate(streamId, payload);
      case frameType.continuation:
        return this.#onContinuation(flags, streamId, payload);
      default:
        // Unknown frame types are ignored (§5.5).
        return this.#idleFrame();
    }
  }

  /** A frame that did no work: too many of them end the connection. */
  #idleFrame(): void {
    if (!this.#idle.spend()) throw new ConnectionError(errorCode.enhanceYourCalm, 'too many frames that do no work');
  }

  #onRstStream(streamId: number, payload: Buffer): void {
    if (streamId === 0 || payload.length !== 4) throw new ConnectionError(errorCode.protocol, 'bad RST_STREAM');
    if (streamId > this.#lastStreamId) throw new ConnectionError(errorCode.protocol, 'RST_STREAM on an idle stream');
    const stream = this.#streams.get(streamId);
    // A stream we answered (or refused) is gone: its late reset does nothing.
    if (stream === undefined) return this.#idleFrame();
    // Still here: we had not answered. Its call may go on working after the cut (rapid reset).
    stream.cut();
    if (this.#resets.reset(streamId)) throw new ConnectionError(errorCode.enhanceYourCalm, 'too many streams reset');
  }

  /** We refuse a new stream with `answer` (RST_STREAM, a 431): it counts as a stream the client reset. */
  #refuse(answer: Buffer): void {
    this.write(answer);
    if (this.#resets.refused()) throw new ConnectionError(errorCode.enhanceYourCalm, 'too many streams refused');
  }

  /** The payload without its padding (§6.1); the pad length byte counts as padding. */
  #unpad(flags: number, payload: Buffer): Buffer {
    if ((flags & flag.padded) === 0) return payload;
    if (payload.length < 1) throw new ConnectionError(errorCode.frameSize, 'padded frame without a pad length');
    const pad = payload[0]!;
    if (pad >= payload.length) throw new ConnectionError(errorCode.protocol, 'padding longer than the frame');
    return payload.subarray(1, payload.length - pad);
  }

  #onDataFrame(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(errorCode.protocol, 'DATA on stream 0');
    if (streamId > this.#lastStreamId) throw new ConnectionError(errorCode.protocol, 'DATA on an idle stream');
    this.#receiveWindow -= payload.length;
    if (this.#receiveWindow < 0) throw new ConnectionError(errorCode.flowControl, 'the connection window was exceeded');
    const data = this.#unpad(flags, payload);
    const stream = this.#streams.get(streamId);
    // What the call will not take (padding; data of a stream that is gone) is granted back at once.
    const unused = stream === undefined || stream.closed ? payload.length : payload.length - data.length;
    if (unused > 0) this.#grantConnection(unused);
    // A stream we closed (reset, or answered before the client's half-close): its late frames are ignored (§5.1).
    if (stream === undefined || stream.closed) return this.#idleFrame();
    if (stream.remoteEnded) {
      stream.reset(errorCode.streamClosed);
      return;
    }
    const endStream = (flags & flag.endStream) !== 0;
    if (data.length === 0 && !endStream) return this.#idleFrame();
    stream.receiveWindow -= payload.length;
    if (stream.receiveWindow < 0) return stream.reset(errorCode.flowControl);
    stream.receiveData(data, endStream);
  }

  #grantConnection(bytes: number): void {
    this.#unackedBytes += bytes;
    if (this.#unackedBytes >= h2ConnectionWindowBytes / 2) {
      this.write(windowUpdateFrame(0, this.#unackedBytes));
      this.#receiveWindow += this.#unackedBytes;
      this.#unackedBytes = 0;
    }
  }

  #onHeaders(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(errorCode.protocol, 'HEADERS on stream 0');
    let fragment = this.#unpad(flags, payload);
    if ((flags & flag.priority) !== 0) {
      if (fragment.length < 5) throw new ConnectionError(errorCode.frameSize, 'HEADERS too short for its priority');
      fragment = fragment.subarray(5);
    }
    const endStream = (flags & flag.endStream) !== 0;
    this.#block = { streamId, endStream, parts: [fragment], bytes: fragment.length };
    this.#checkBlockSize();
    if ((flags & flag.endHeaders) !== 0) this.#headerBlockDone();
  }

  #onContinuation(flags: number, streamId: number, payload: Buffer): void {
    const block = this.#block;
    if (block === undefined || block.streamId !== streamId) throw new ConnectionError(errorCode.protocol, 'CONTINUATION without HEADERS');
    const endHeaders = (flags & flag.endHeaders) !== 0;
    // Empty ones add no bytes to the block, so its size limit would never stop them (CVE-2024-27316's kind).
    if (payload.length === 0 && !endHeaders) return this.#idleFrame();
    block.parts.push(payload);
    block.bytes += payload.length;
    this.#checkBlockSize();
    if (endHeaders) this.#headerBlockDone();
  }

  #checkBlockSize(): void {
    // The whole block must be decoded to keep HPACK's table in step, so a larger one ends the connection.
    if (this.#block!.bytes > h2HeaderListBytesMax) throw new ConnectionError(errorCode.enhanceYourCalm, 'header block too large');
  }

  #headerBlockDone(): void {
    const { streamId, endStream, parts } = this.#block!;
    this.#block = undefined;
    let decoded;
    try {
      decoded = this.#decoder.decode(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    } catch (err) {
      if (err instanceof HpackError) throw new ConnectionError(errorCode.compression, err.message);
      throw err;
    }
    const existing = this.#streams.get(streamId);
    if (streamId <= this.#lastStreamId) {
      // Trailers from the client (gRPC clients send none) end the stream; on one we closed they are ignored.
      if (existing === undefined) return this.#idleFrame();
      if (existing.remoteEnded) return existing.reset(errorCode.streamClosed);
      if (!endStream) throw new ConnectionError(errorCode.protocol, 'trailers without END_STREAM');
      return existing.receiveEnd();
    }
    if (streamId % 2 === 0) throw new ConnectionError(errorCode.protocol, 'a client stream id must be odd');
    if (this.#goingAway) return this.#refuse(rstStreamFrame(streamId, errorCode.refusedStream));
    // A client that asks and does not read our answers is asking for our memory (unary answers are written
    // whatever the socket holds). Before #lastStreamId moves: our GOAWAY tells it this one was not served.
    if (this.socket.writableLength > h2ControlBufferedBytesMax) throw new ConnectionError(errorCode.enhanceYourCalm, 'answers not read');
    this.#lastStreamId = streamId;
    const limit = this.#options.concurrentStreamsMax;
    if (limit !== undefined && this.#streams.size >= limit) return this.#refuse(rstStreamFrame(streamId, errorCode.refusedStream));
    if (decoded.tooLarge) return this.#refuse(headersFrames(streamId, httpStatusBlock(431), true, this.peerFrameBytesMax));
    const headers = toHeaders(decoded.fields);
    if (headers === undefined) return this.#refuse(rstStreamFrame(streamId, errorCode.protocol));
    const stream = new H2Stream(this, streamId, headers, this.#peerStreamWindow);
    this.#streams.set(streamId, stream);
    this.#resets.opened(streamId);
    this.#idle.refund();
    this.#options.pingPolicy?.streamOpened();
    this.#options.onStream(stream, this);
    if (endStream && !stream.closed) stream.receiveEnd();
  }

  #onSettings(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new ConnectionError(errorCode.protocol, 'SETTINGS on a stream');
    if ((flags & flag.ack) !== 0) {
      if (payload.length !== 0) throw new ConnectionError(errorCode.frameSize, 'SETTINGS ack with a payload');
      // We send one SETTINGS: one ack does work, any other does none.
      if (this.#settingsAcked) return this.#idleFrame();
      this.#settingsAcked = true;
      return;
    }
    if (payload.length % 6 !== 0) throw new ConnectionError(errorCode.frameSize, 'SETTINGS length not a multiple of 6');
    // Past the first, each costs an ack and a walk over the open streams: a few are fine (grpc-go's BDP
    // estimator sends one as its window grows), a stream of them is not.
    if (this.#settingsApplied++ > 0) this.#idleFrame();
    for (let at = 0; at < payload.length; at += 6) {
      const id = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      if (id === settingId.initialWindowSize) {
        if (value > windowBytesLimit) throw new ConnectionError(errorCode.flowControl, 'SETTINGS_INITIAL_WINDOW_SIZE too large');
        const delta = value - this.#peerStreamWindow;
        this.#peerStreamWindow = value;
        for (const stream of this.#streams.values()) {
          stream.sendWindow += delta;
          if (stream.sendWindow > windowBytesLimit) throw new ConnectionError(errorCode.flowControl, 'a stream window overflowed');
        }
      } else if (id === settingId.maxFrameSize) {
        if (value < defaultFrameBytesMax || value > frameBytesLimit) throw new ConnectionError(errorCode.protocol, 'bad SETTINGS_MAX_FRAME_SIZE');
        this.peerFrameBytesMax = value;
      } else if (id === settingId.enablePush && value > 1) throw new ConnectionError(errorCode.protocol, 'bad SETTINGS_ENABLE_PUSH');
      // HEADER_TABLE_SIZE: our encoder uses no dynamic table; the others do not concern a server.
    }
    this.#writeControl(settingsAck);
    this.#flushBlocked();
  }

  #onPing(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new ConnectionError(errorCode.protocol, 'PING on a stream');
    if (payload.length !== pingPayloadBytes) throw new ConnectionError(errorCode.frameSize, 'PING of the wrong size');
    if ((flags & flag.ack) !== 0) {
      if (this.#pingSentAt !== undefined && payload.equals(this.#pingSentAt)) {
        this.#pingSentAt = undefined;
        return this.#schedulePing();
      }
      // An ack of no ping of ours.
      return this.#idleFrame();
    }
    this.#writeControl(pingFrame(payload, true));
    this.#options.pingPolicy?.onPing(performance.now());
  }

  #onWindowUpdate(streamId: number, payload: Buffer): void {
    if (payload.length !== 4) throw new ConnectionError(errorCode.frameSize, 'WINDOW_UPDATE of the wrong size');
    const increment = payload.readUInt32BE(0) & 0x7fffffff;
    if (streamId === 0) {
      if (increment === 0) throw new ConnectionError(errorCode.protocol, 'WINDOW_UPDATE of 0');
      this.connectionSendWindow += increment;
      if (this.connectionSendWindow > windowBytesLimit) throw new ConnectionError(errorCode.flowControl, 'the connection window overflowed');
      return this.#flushBlocked();
    }
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      if (streamId > this.#lastStreamId) throw new ConnectionError(errorCode.protocol, 'WINDOW_UPDATE on an idle stream');
      // For a stream that is gone (racing our answer): it does nothing.
      return this.#idleFrame();
    }
    if (increment === 0) return stream.reset(errorCode.protocol);
    stream.sendWindow += increment;
    if (stream.sendWindow > windowBytesLimit) return stream.reset(errorCode.flowControl);
    if (this.#blocked.has(stream)) {
      this.#blocked.delete(stream);
      stream.flush();
    }
  }

  // --- writing and ending ---------------------------------------------------------------------------------

  /** An answer the client asked for: a client that asks and never reads is cut. */
  #writeControl(bytes: Buffer): void {
    if (this.socket.writableLength > h2ControlBufferedBytesMax) throw new ConnectionError(errorCode.enhanceYourCalm, 'control frames not read');
    this.write(bytes);
  }

  #flushBlocked(): void {
    if (this.#blocked.size === 0 || this.socketFull) return;
    const streams = [...this.#blocked];
    this.#blocked.clear();
    for (const stream of streams) {
      if (!stream.closed) stream.flush();
    }
  }

  #schedulePing(): void {
    const intervalMs = this.#options.keepAliveIntervalMs;
    if (intervalMs === 0 || this.#ended) return;
    clearTimeout(this.#pingTimer);
    this.#pingTimer = setTimeout(() => this.#ping(), intervalMs);
    this.#pingTimer.unref();
  }

  #ping(): void {
    if (this.#ended) return;
    const payload = Buffer.allocUnsafe(pingPayloadBytes);
    payload.writeDoubleBE(performance.now());
    this.#pingSentAt = payload;
    this.write(pingFrame(payload, false));
    this.#pingTimer = setTimeout(() => {
      if (this.#pingSentAt === payload) this.destroy();
    }, this.#options.keepAliveTimeoutMs);
    this.#pingTimer.unref();
  }

  /** Ends the socket once what was written has left; destroys it if that takes too long. */
  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#corked) this.uncork();
    this.socket.end();
    const timer = setTimeout(() => this.socket.destroy(), goAwayFlushMs);
    timer.unref();
    this.socket.once('close', () => clearTimeout(timer));
  }

  #onClose(): void {
    this.#ended = true;
    clearTimeout(this.#pingTimer);
    clearTimeout(this.#handshakeTimer);
    this.#blocked.clear();
    for (const stream of [...this.#streams.values()]) stream.cut();
    this.#streams.clear();
    for (const fn of this.#closeListeners.splice(0)) fn();
  }
}

function uncork(connection: H2Connection): void {
  connection.uncork();
}

const pseudoHeaders = new Set([':method', ':scheme', ':authority', ':path']);

/**
 * The decoded fields as Node's header object (no prototype: a header named "constructor" is only a header), or
 * undefined for a malformed request (§8.2, §8.3): an uppercase name, an unknown or late pseudo-header.
 */
function toHeaders(fields: string[]): RequestHeaders | undefined {
  const headers: RequestHeaders = Object.create(null) as RequestHeaders;
  let regular = false;
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i]!;
    const value = fields[i + 1]!;
    if (name !== name.toLowerCase()) return undefined;
    if (name.charCodeAt(0) === 0x3a) {
      if (regular || !pseudoHeaders.has(name) || headers[name] !== undefined) return undefined;
    } else regular = true;
    const had = headers[name];
    if (had === undefined) headers[name] = value;
    else if (Array.isArray(had)) had.push(value);
    else headers[name] = [had, value];
  }
  return headers;
}
