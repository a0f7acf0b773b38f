/**
 * A gRPC call carried by one node:http2 stream (server-call.ts says what a call is). node:http2 sends the
 * response headers with `respond`, each message as a stream write, and the trailers from 'wantTrailers' once
 * the writable side ended (`waitForTrailers`), or a trailers-only response as headers with END_STREAM.
 */
import type { ServerHttp2Stream } from 'node:http2';
import * as tls from 'node:tls';
import { frameMessage } from './message-frames.js';
import { encodeStatusMessage } from './call-headers.js';
import type { PingPolicy } from './ping-policy.js';
import { ServerCall, type CallCodec, type CallStatus } from './server-call.js';


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

export class H2Call extends ServerCall {
  readonly #stream: ServerHttp2Stream;
  #headersSent = false;
  #awaitingDrain = false;

  constructor(stream: ServerHttp2Stream, headers: Record<string, string | string[] | undefined>, codec: CallCodec, messageBytesMax: number, pingPolicy?: PingPolicy) {
    super(headers, codec, messageBytesMax, pingPolicy);
    this.#stream = stream;
    stream.once('close', () => this.carrierEnded());
  }

  protected listen(onChunk: (chunk: Buffer) => void, onEnd: () => void): void {
    this.#stream.on('data', onChunk);
    this.#stream.once('end', onEnd);
  }

  protected get carrierClosed(): boolean {
    return this.#stream.destroyed || this.#stream.closed;
  }

  protected sendMessage(bytes: Uint8Array): boolean {
    this.#sendHeaders();
    const more = this.#stream.write(frameMessage(bytes));
    if (!more && !this.#awaitingDrain) {
      this.#awaitingDrain = true;
      this.#stream.once('drain', () => {
        this.#awaitingDrain = false;
        this.emit('drain');
      });
    }
    return more;
  }

  protected sendUnary(bytes: Uint8Array): void {
    this.#sendHeaders();
    this.#stream.on('wantTrailers', sendOkTrailers);
    this.#stream.end(frameMessage(bytes));
  }

  protected sendStatusFrames(status: CallStatus): void {
    const stream = this.#stream;
    const trailers: Record<string, string> = { 'grpc-status': String(status.code) };
    if (status.details !== '') trailers['grpc-message'] = encodeStatusMessage(status.details);
    if (!this.#headersSent) {
      this.#headersSent = true;
      stream.respond({ ...responseHeaders, ...trailers }, { endStream: true });
    } else {
      stream.once('wantTrailers', () => stream.sendTrailers(trailers));
      stream.end();
    }
    // A client still sending (a stream the server ended) gets no more reads from us.
    if (!stream.readableEnded) stream.resume();
  }

  pause(): void {
    this.#stream.pause();
  }

  resume(): void {
    this.#stream.resume();
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

  sendMetadata(): void {
    this.#sendHeaders();
  }

  #sendHeaders(): void {
    if (this.#headersSent) return;
    this.#headersSent = true;
    this.pingPolicy?.sent();
    this.#stream.respond(responseHeaders, headersThenTrailers);
  }
}
