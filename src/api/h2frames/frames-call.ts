/**
 * One gRPC call on one of our own HTTP/2 streams (h2-stream.ts), with the same surface as h2grpc's H2Call
 * (the one grpc-js' server call objects have and our services and metrics use): `request`, `metadata.get`,
 * `cancelled` and 'cancelled', `getPeer`, `getAuthContext`; for streams 'data' / 'end' / pause / resume,
 * write (false: wait for 'drain') / end, an emitted 'error' ending the call with its status; 'finish' after
 * an OK end. The statuses, their words and when 'cancelled' is emitted are H2Call's (see there).
 */
import { EventEmitter } from 'node:events';
import * as tls from 'node:tls';
import type { Duplex } from 'node:stream';
import { FrameError, MessageReader } from '../h2grpc/message-frames.js';
import { HeaderMetadata, encodeStatusMessage } from '../h2grpc/call-headers.js';
import { code, statusOf, type CallCodec, type CallStatus } from '../h2grpc/h2-call.js';
import type { PingPolicy } from '../h2grpc/ping-policy.js';
import type { CallDeadline, CallDeadlines } from '../h2grpc/call-deadlines.js';
import type { H2Stream } from './h2-stream.js';
import { statusTrailersBlock, trailersOnlyBlock } from './response-headers.js';

export class FramesCall extends EventEmitter {
  request: unknown = undefined;
  readonly metadata: HeaderMetadata;
  cancelled = false;
  readonly #stream: H2Stream;
  readonly #socket: Duplex;
  readonly #codec: CallCodec;
  readonly #reader: MessageReader;
  #finished = false;
  #deadline: CallDeadline | undefined;
  readonly #pingPolicy: PingPolicy | undefined;

  constructor(stream: H2Stream, socket: Duplex, codec: CallCodec, messageBytesMax: number, pingPolicy: PingPolicy | undefined) {
    super();
    this.#stream = stream;
    this.#socket = socket;
    this.#codec = codec;
    this.#pingPolicy = pingPolicy;
    this.#reader = new MessageReader(messageBytesMax);
    this.metadata = new HeaderMetadata(stream.headers);
    stream.onClose = (cut) => {
      if (cut) this.#onCut();
    };
  }

  /** Fails the call DEADLINE_EXCEEDED after `ms` unless it finished first (the server's one deadline list). */
  setDeadline(deadlines: CallDeadlines, ms: number): void {
    this.#deadline = deadlines.add(ms, () => {
      this.#deadline = undefined;
      this.#sendStatus({ code: code.deadlineExceeded, details: 'Deadline exceeded' });
      this.#cancel();
    });
  }

  /** Unary and server-streaming requests: exactly one message, then the client's half-close. */
  readOne(onRequest: (request: unknown) => void): void {
    let message: Buffer | undefined;
    let count = 0;
    this.#stream.onData = (chunk) => {
      const messages = this.#read(chunk);
      if (messages === undefined) return;
      count += messages.length;
      if (messages.length > 0) message = messages[0];
    };
    this.#stream.onEnd = () => {
      if (this.#finished) return;
      if (count !== 1 || this.#reader.partial) {
        const details = count === 0 ? 'No message received' : 'Received a second request message';
        return void this.#sendStatus({ code: count === 0 ? code.internal : code.unimplemented, details });
      }
      const request = this.#decode(message!);
      if (request === undefined) return;
      this.request = request;
      onRequest(request);
    };
  }

  /** Client- and bidi-streaming requests: each message as 'data', the half-close as 'end'. */
  readStream(): void {
    this.#stream.onData = (chunk) => {
      const messages = this.#read(chunk);
      if (messages === undefined) return;
      for (const m of messages) {
        if (this.#finished) return;
        const request = this.#decode(m);
        if (request === undefined) return;
        this.emit('data', request);
      }
    };
    this.#stream.onEnd = () => {
      if (!this.#finished) this.emit('end');
    };
  }

  pause(): void {
    this.#stream.pause();
  }

  resume(): void {
    this.#stream.resume();
  }

  /** Sends one message; false when it waits for the client's window or the socket ('drain' follows). */
  write(message: unknown): boolean {
    if (this.#finished || this.#stream.closed) return false;
    let bytes: Uint8Array;
    try {
      bytes = this.#codec.serialize(message);
    } catch {
      this.#sendStatus({ code: code.internal, details: 'Error serializing response' });
      return false;
    }
    this.#pingPolicy?.sent();
    this.#stream.onDrain ??= () => super.emit('drain');
    return this.#stream.writeMessage(bytes);
  }

  /** Ends a response stream with OK. */
  end(): void {
    if (this.#sendStatus({ code: code.ok, details: '' })) super.emit('finish');
  }

  /** The unary callback: the response and OK, or the error's status. */
  respond(err: unknown, value?: unknown): void {
    if (this.#finished) return;
    if (err !== null && err !== undefined) return void this.#sendStatus(statusOf(err));
    let bytes: Uint8Array;
    try {
      bytes = this.#codec.serialize(value);
    } catch {
      return void this.#sendStatus({ code: code.internal, details: 'Error serializing response' });
    }
    this.#finish();
    this.#pingPolicy?.sent();
    this.#stream.respondUnary(bytes);
  }

  /** As grpc-js: an emitted 'error' is the call's status; listeners, if any, still hear it. */
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error') {
      this.#sendStatus(statusOf(args[0]));
      return this.listenerCount('error') > 0 ? super.emit(event, ...args) : true;
    }
    return super.emit(event, ...args);
  }

  getPeer(): string {
    const socket = this.#socket as Partial<tls.TLSSocket>;
    return socket.remoteAddress === undefined ? 'unknown' : `${socket.remoteAddress}:${socket.remotePort ?? ''}`;
  }

  /** grpc-js' rule: the certificate of a verified TLS connection (call.ts takes its CN as the auth user). */
  getAuthContext(): { transportSecurityType?: string; sslPeerCertificate?: tls.PeerCertificate } {
    const socket = this.#socket;
    if (!(socket instanceof tls.TLSSocket) || !socket.authorized) return {};
    const cert = socket.getPeerCertificate();
    return { transportSecurityType: 'ssl', ...(cert.raw !== undefined ? { sslPeerCertificate: cert } : {}) };
  }

  getDeadline(): number {
    return Infinity;
  }

  sendMetadata(): void {
    this.#pingPolicy?.sent();
    this.#stream.sendHeaders();
  }

  /** Sends `status` unless the call already ended; false if it had. */
  sendStatus(status: CallStatus): boolean {
    return this.#sendStatus(status);
  }

  #read(chunk: Buffer): Buffer[] | undefined {
    if (this.#finished) return undefined;
    try {
      return this.#reader.push(chunk);
    } catch (err) {
      if (!(err instanceof FrameError)) throw err;
      this.#sendStatus({ code: err.kind === 'tooLarge' ? code.resourceExhausted : code.internal, details: err.message });
      return undefined;
    }
  }

  #decode(bytes: Buffer): unknown {
    try {
      return this.#codec.deserialize(bytes);
    } catch {
      this.#sendStatus({ code: code.internal, details: 'Error deserializing request' });
      return undefined;
    }
  }

  #sendStatus(status: CallStatus): boolean {
    if (this.#finished) return false;
    this.#finish();
    const stream = this.#stream;
    if (stream.closed) return true;
    const message = status.details === '' ? '' : encodeStatusMessage(status.details);
    this.#pingPolicy?.sent();
    stream.end(stream.headersSent ? statusTrailersBlock(status.code, message) : trailersOnlyBlock(status.code, message));
    return true;
  }

  #finish(): void {
    this.#finished = true;
    this.#deadline?.cancel();
    this.#deadline = undefined;
  }

  #onCut(): void {
    if (this.#finished) return;
    this.#finish();
    this.#cancel();
  }

  #cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    super.emit('cancelled', 'cancelled');
  }
}
