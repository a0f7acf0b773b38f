/**
 * One gRPC call on one HTTP/2 stream, with the surface of grpc-js' server call objects that our services and
 * metrics use (the same one gateway-call.ts gives the JSON gateway): `request`, `metadata.get`, `cancelled`
 * and 'cancelled', `getPeer`, `getAuthContext`; for streams 'data' / 'end' / pause / resume, write (false:
 * wait for 'drain') / end, and an emitted 'error' ending the call with its status; 'finish' after an OK end.
 *
 * Status goes in trailers after the response headers and messages, or as a trailers-only response when
 * nothing was sent yet (an immediate error). 'cancelled' is emitted only when the call ends before its status
 * was sent: a client reset, a lost connection, or the deadline (grpc-js also emits it after every finished
 * call; call.ts's CallContext and the metrics ignore that one, so neither depends on the difference).
 */
import { EventEmitter } from 'node:events';
import type { ServerHttp2Stream } from 'node:http2';
import * as tls from 'node:tls';
import { FrameError, MessageReader, frameMessage } from './message-frames.js';
import { HeaderMetadata, encodeStatusMessage } from './call-headers.js';
import type { PingPolicy } from './ping-policy.js';
import type { CallDeadline, CallDeadlines } from './call-deadlines.js';

/** gRPC status codes used here (the numbers are the specification's). */
export const code = { ok: 0, cancelled: 1, unknown: 2, deadlineExceeded: 4, permissionDenied: 7, resourceExhausted: 8, unimplemented: 12, internal: 13, unavailable: 14 } as const;

export interface CallStatus {
  code: number;
  details: string;
}

/** What the call needs of its method (a grpc-js MethodDefinition's codecs). */
export interface CallCodec {
  deserialize(bytes: Buffer): unknown;
  serialize(value: unknown): Buffer;
}

const responseHeaders = { ':status': 200, 'content-type': 'application/grpc' };
const headersThenTrailers = { waitForTrailers: true };
const okTrailers = { 'grpc-status': '0' };

/**
 * A unary OK's 'wantTrailers' listener, one function for every call (no closure per call; `this` is the
 * stream). 'wantTrailers' comes once per stream, so `on` (no once-wrapper) is enough.
 */
function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(okTrailers);
}

/** A status from what a handler passed: grpc-js accepts `{code, details}` and Errors with `code`. */
export function statusOf(err: unknown): CallStatus {
  const e = err as { code?: unknown; details?: unknown; message?: unknown } | null;
  const c = typeof e?.code === 'number' ? e.code : code.unknown;
  const details = typeof e?.details === 'string' ? e.details : typeof e?.message === 'string' ? e.message : '';
  return { code: c, details };
}

export class H2Call extends EventEmitter {
  request: unknown = undefined;
  readonly metadata: HeaderMetadata;
  cancelled = false;
  readonly #stream: ServerHttp2Stream;
  readonly #codec: CallCodec;
  readonly #reader: MessageReader;
  #headersSent = false;
  #finished = false;
  #awaitingDrain = false;
  #deadline: CallDeadline | undefined;
  /** The connection's client ping floor, told when we send (what we send may make a client ping). */
  readonly #pingPolicy: PingPolicy | undefined;

  constructor(stream: ServerHttp2Stream, headers: Record<string, string | string[] | undefined>, codec: CallCodec, messageBytesMax: number, pingPolicy?: PingPolicy) {
    super();
    this.#pingPolicy = pingPolicy;
    this.#stream = stream;
    this.#codec = codec;
    this.#reader = new MessageReader(messageBytesMax);
    this.metadata = new HeaderMetadata(headers);
    stream.once('close', () => this.#onClose());
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
    this.#stream.on('data', (chunk: Buffer) => {
      const messages = this.#read(chunk);
      if (messages === undefined) return;
      count += messages.length;
      if (messages.length > 0) message = messages[0];
    });
    this.#stream.once('end', () => {
      if (this.#finished) return;
      if (count !== 1 || this.#reader.partial) {
        const details = count === 0 ? 'No message received' : 'Received a second request message';
        return this.#sendStatus({ code: count === 0 ? code.internal : code.unimplemented, details });
      }
      const request = this.#decode(message!);
      if (request === undefined) return;
      this.request = request;
      onRequest(request);
    });
  }

  /** Client- and bidi-streaming requests: each message as 'data', the half-close as 'end'. */
  readStream(): void {
    this.#stream.on('data', (chunk: Buffer) => {
      const messages = this.#read(chunk);
      if (messages === undefined) return;
      for (const m of messages) {
        if (this.#finished) return;
        const request = this.#decode(m);
        if (request === undefined) return;
        this.emit('data', request);
      }
    });
    this.#stream.once('end', () => {
      if (!this.#finished) this.emit('end');
    });
  }

  pause(): void {
    this.#stream.pause();
  }

  resume(): void {
    this.#stream.resume();
  }

  /** Sends one message; false when the stream's buffer is full ('drain' follows). */
  write(message: unknown): boolean {
    if (this.#finished || this.#stream.destroyed) return false;
    let bytes: Buffer;
    try {
      bytes = this.#codec.serialize(message);
    } catch {
      this.#sendStatus({ code: code.internal, details: 'Error serializing response' });
      return false;
    }
    this.#sendHeaders();
    this.#pingPolicy?.sent();
    const more = this.#stream.write(frameMessage(bytes));
    if (!more && !this.#awaitingDrain) {
      this.#awaitingDrain = true;
      this.#stream.once('drain', () => {
        this.#awaitingDrain = false;
        super.emit('drain');
      });
    }
    return more;
  }

  /** Ends a response stream with OK. */
  end(): void {
    if (this.#sendStatus({ code: code.ok, details: '' })) super.emit('finish');
  }

  /** The unary callback: the response and OK, or the error's status. */
  respond(err: unknown, value?: unknown): void {
    if (this.#finished) return;
    if (err !== null && err !== undefined) return void this.#sendStatus(statusOf(err));
    let bytes: Buffer;
    try {
      bytes = this.#codec.serialize(value);
    } catch {
      return void this.#sendStatus({ code: code.internal, details: 'Error serializing response' });
    }
    this.#finish();
    if (this.#stream.destroyed) return;
    this.#sendHeaders();
    this.#pingPolicy?.sent();
    this.#stream.on('wantTrailers', sendOkTrailers);
    this.#stream.end(frameMessage(bytes));
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
    const socket = this.#stream.session?.socket;
    return socket === undefined ? 'unknown' : `${socket.remoteAddress ?? ''}:${socket.remotePort ?? ''}`;
  }

  /** grpc-js' rule: the certificate of a verified TLS connection (call.ts takes its CN as the auth user). */
  getAuthContext(): { transportSecurityType?: string; sslPeerCertificate?: tls.PeerCertificate } {
    const socket = this.#stream.session?.socket;
    if (!(socket instanceof tls.TLSSocket) || !socket.authorized) return {};
    const cert = socket.getPeerCertificate();
    return { transportSecurityType: 'ssl', ...(cert.raw !== undefined ? { sslPeerCertificate: cert } : {}) };
  }

  getDeadline(): number {
    return Infinity;
  }

  sendMetadata(): void {
    this.#sendHeaders();
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

  #sendHeaders(): void {
    if (this.#headersSent) return;
    this.#headersSent = true;
    this.#pingPolicy?.sent();
    this.#stream.respond(responseHeaders, headersThenTrailers);
  }

  #sendStatus(status: CallStatus): boolean {
    if (this.#finished) return false;
    this.#finish();
    const stream = this.#stream;
    if (stream.destroyed || stream.closed) return true;
    const trailers: Record<string, string> = { 'grpc-status': String(status.code) };
    if (status.details !== '') trailers['grpc-message'] = encodeStatusMessage(status.details);
    this.#pingPolicy?.sent();
    if (!this.#headersSent) {
      this.#headersSent = true;
      stream.respond({ ...responseHeaders, ...trailers }, { endStream: true });
    } else {
      stream.once('wantTrailers', () => stream.sendTrailers(trailers));
      stream.end();
    }
    // A client still sending (a stream the server ended) gets no more reads from us.
    if (!stream.readableEnded) stream.resume();
    return true;
  }

  #finish(): void {
    this.#finished = true;
    this.#deadline?.cancel();
    this.#deadline = undefined;
  }

  #onClose(): void {
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
