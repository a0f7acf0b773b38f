/**
 * A gRPC call carried by one of our own HTTP/2 streams (h2-stream.ts; server-call.ts says what a call is). A
 * unary OK leaves as one buffer (H2Stream.respondUnary); a status is one trailers block, or a trailers-only
 * response when nothing was sent.
 */
import * as tls from 'node:tls';
import type { Duplex } from 'node:stream';
import { encodeStatusMessage } from '../h2grpc/call-headers.js';
import { ServerCall, type CallCodec, type CallStatus } from '../h2grpc/server-call.js';
import type { PingPolicy } from '../h2grpc/ping-policy.js';
import type { H2Stream } from './h2-stream.js';
import { statusTrailersBlock, trailersOnlyBlock } from './response-headers.js';

export class FramesCall extends ServerCall {
  readonly #stream: H2Stream;
  readonly #socket: Duplex;

  constructor(stream: H2Stream, socket: Duplex, codec: CallCodec, messageBytesMax: number, pingPolicy: PingPolicy | undefined) {
    super(stream.headers, codec, messageBytesMax, pingPolicy);
    this.#stream = stream;
    this.#socket = socket;
    stream.onClose = (cut) => {
      if (cut) this.carrierEnded();
    };
  }

  protected listen(onChunk: (chunk: Buffer) => void, onEnd: () => void): void {
    this.#stream.onData = onChunk;
    this.#stream.onEnd = onEnd;
  }

  protected get carrierClosed(): boolean {
    return this.#stream.closed;
  }

  protected sendMessage(bytes: Uint8Array): boolean {
    this.#stream.onDrain ??= () => this.emit('drain');
    return this.#stream.writeMessage(bytes);
  }

  protected sendUnary(bytes: Uint8Array): void {
    this.#stream.respondUnary(bytes);
  }

  protected sendStatusFrames(status: CallStatus): void {
    const stream = this.#stream;
    const message = status.details === '' ? '' : encodeStatusMessage(status.details);
    stream.end(stream.headersSent ? statusTrailersBlock(status.code, message) : trailersOnlyBlock(status.code, message));
  }

  pause(): void {
    this.#stream.pause();
  }

  resume(): void {
    this.#stream.resume();
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

  sendMetadata(): void {
    this.pingPolicy?.sent();
    this.#stream.sendHeaders();
  }
}
