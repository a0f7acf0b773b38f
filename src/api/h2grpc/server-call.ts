/**
 * One gRPC call as our servers hand it to the services, whatever carries it: the surface grpc-js' server call
 * objects have and our services and metrics use (the same one gateway-call.ts gives the JSON gateway):
 * `request`, `metadata.get`, `cancelled` and 'cancelled', `getPeer`, `getAuthContext`; for streams 'data' /
 * 'end' / pause / resume, write (false: wait for 'drain') / end, and an emitted 'error' ending the call with
 * its status; 'finish' after an OK end. A subclass carries it: H2Call on a node:http2 stream, FramesCall on
 * our own (src/api/h2frames); they differ in how bytes come and go, not in what a call means.
 *
 * Status goes in trailers after the response headers and messages, or as a trailers-only response when
 * nothing was sent yet (an immediate error). 'cancelled' is emitted only when the call ends before its status
 * was sent: a client reset, a lost connection, or the deadline (grpc-js also emits it after every finished
 * call; call.ts's CallContext and the metrics ignore that one, so neither depends on the difference).
 */
import { EventEmitter } from 'node:events';
import type * as tls from 'node:tls';
import { FrameError, MessageReader } from './message-frames.js';
import { HeaderMetadata } from './call-headers.js';
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

/** A status from what a handler passed: grpc-js accepts `{code, details}` and Errors with `code`. */
export function statusOf(err: unknown): CallStatus {
  const e = err as { code?: unknown; details?: unknown; message?: unknown } | null;
  const c = typeof e?.code === 'number' ? e.code : code.unknown;
  const details = typeof e?.details === 'string' ? e.details : typeof e?.message === 'string' ? e.message : '';
  return { code: c, details };
}

export abstract class ServerCall extends EventEmitter {
  request: unknown = undefined;
  readonly metadata: HeaderMetadata;
  cancelled = false;
  readonly #codec: CallCodec;
  readonly #reader: MessageReader;
  #finished = false;
  #deadline: CallDeadline | undefined;
  /** The connection's client ping floor, told when we send (what we send may make a client ping). */
  protected readonly pingPolicy: PingPolicy | undefined;

  constructor(headers: Record<string, string | string[] | undefined>, codec: CallCodec, messageBytesMax: number, pingPolicy: PingPolicy | undefined) {
    super();
    this.metadata = new HeaderMetadata(headers);
    this.#codec = codec;
    this.#reader = new MessageReader(messageBytesMax);
    this.pingPolicy = pingPolicy;
  }

  // --- what a carrier does ---------------------------------------------------------------------------------

  /** Calls `onChunk` with each piece of the request's DATA, then `onEnd` at the client's half-close. */
  protected abstract listen(onChunk: (chunk: Buffer) => void, onEnd: () => void): void;
  /** The stream is gone: nothing more can be sent. */
  protected abstract get carrierClosed(): boolean;
  /** One message (headers first if not sent); false when it waits: 'drain' follows. */
  protected abstract sendMessage(bytes: Uint8Array): boolean;
  /** A unary OK: headers if not sent, the message, OK trailers. */
  protected abstract sendUnary(bytes: Uint8Array): void;
  /** The status: trailers, or a trailers-only response when nothing was sent. */
  protected abstract sendStatusFrames(status: CallStatus): void;
  abstract pause(): void;
  abstract resume(): void;
  abstract getPeer(): string;
  abstract getAuthContext(): { transportSecurityType?: string; sslPeerCertificate?: tls.PeerCertificate };
  abstract sendMetadata(): void;

  // --- the call ------------------------------------------------------------------------------------------

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
    this.listen(
      (chunk) => {
        const messages = this.#read(chunk);
        if (messages === undefined) return;
        count += messages.length;
        if (messages.length > 0) message = messages[0];
      },
      () => {
        if (this.#finished) return;
        if (count !== 1 || this.#reader.partial) {
          const details = count === 0 ? 'No message received' : 'Received a second request message';
          return void this.#sendStatus({ code: count === 0 ? code.internal : code.unimplemented, details });
        }
        const request = this.#decode(message!);
        if (request === undefined) return;
        this.request = request;
        onRequest(request);
      },
    );
  }

  /** Client- and bidi-streaming requests: each message as 'data', the half-close as 'end'. */
  readStream(): void {
    this.listen(
      (chunk) => {
        const messages = this.#read(chunk);
        if (messages === undefined) return;
        for (const m of messages) {
          if (this.#finished) return;
          const request = this.#decode(m);
          if (request === undefined) return;
          this.emit('data', request);
        }
      },
      () => {
        if (!this.#finished) this.emit('end');
      },
    );
  }

  /** Sends one message; false when it waits for the client or the socket ('drain' follows). */
  write(message: unknown): boolean {
    if (this.#finished || this.carrierClosed) return false;
    const bytes = this.#serialize(message);
    if (bytes === undefined) return false;
    this.pingPolicy?.sent();
    return this.sendMessage(bytes);
  }

  /** Ends a response stream with OK. */
  end(): void {
    if (this.#sendStatus({ code: code.ok, details: '' })) super.emit('finish');
  }

  /** The unary callback: the response and OK, or the error's status. */
  respond(err: unknown, value?: unknown): void {
    if (this.#finished) return;
    if (err !== null && err !== undefined) return void this.#sendStatus(statusOf(err));
    const bytes = this.#serialize(value);
    if (bytes === undefined) return;
    this.#finish();
    if (this.carrierClosed) return;
    this.pingPolicy?.sent();
    this.sendUnary(bytes);
  }

  /** As grpc-js: an emitted 'error' is the call's status; listeners, if any, still hear it. */
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error') {
      this.#sendStatus(statusOf(args[0]));
      return this.listenerCount('error') > 0 ? super.emit(event, ...args) : true;
    }
    return super.emit(event, ...args);
  }

  getDeadline(): number {
    return Infinity;
  }

  /** Sends `status` unless the call already ended; false if it had. */
  sendStatus(status: CallStatus): boolean {
    return this.#sendStatus(status);
  }

  /** The carrier ended (a client reset, a lost connection): a call not finished yet is cancelled. */
  protected carrierEnded(): void {
    if (this.#finished) return;
    this.#finish();
    this.#cancel();
  }

  /** The serialized response, or undefined after answering INTERNAL (a message the codec refused). */
  #serialize(value: unknown): Uint8Array | undefined {
    try {
      return this.#codec.serialize(value);
    } catch {
      this.#sendStatus({ code: code.internal, details: 'Error serializing response' });
      return undefined;
    }
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
    if (this.carrierClosed) return true;
    this.pingPolicy?.sent();
    this.sendStatusFrames(status);
    return true;
  }

  #finish(): void {
    this.#finished = true;
    this.#deadline?.cancel();
    this.#deadline = undefined;
  }

  #cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    super.emit('cancelled', 'cancelled');
  }
}
