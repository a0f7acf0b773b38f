/**
 * What a gRPC service handler sees of a gateway request: the shape of grpc-js' server call objects (request,
 * metadata, cancelled / 'cancelled', 'data' / 'end' for client streams, write / end / 'drain', an 'error'
 * emit ending the call with a status), backed by one HTTP/1.1 exchange. This is how the JSON API reaches the
 * very same handlers as gRPC: no second code path for semantics.
 */
import { EventEmitter } from 'node:events';
import type * as http from 'node:http';
import * as tls from 'node:tls';
import type { Wire } from '../grpc/proto.js';
import { gatewayMetadata, type GatewayMetadata } from './gateway-metadata.js';
import type { Status } from '../grpc-status.js';

export interface CallStatus {
  code: Status;
  details: string;
}

export interface CallSink {
  /** A response message (already a decoded protobuf message); false: the HTTP buffer is full. */
  message(m: Wire | Buffer): boolean;
  /** The call ended: with OK (status undefined) or a status. Called once. */
  finish(status?: CallStatus): void;
}

export class GatewayCall extends EventEmitter {
  request: Wire;
  readonly metadata: GatewayMetadata;
  cancelled = false;
  #finished = false;
  readonly #sink: CallSink;
  readonly #peer: string;
  readonly #req: http.IncomingMessage;

  constructor(req: http.IncomingMessage, request: Wire, sink: CallSink) {
    super();
    this.request = request;
    this.#sink = sink;
    this.#req = req;
    this.#peer = `${req.socket.remoteAddress ?? ''}:${req.socket.remotePort ?? ''}`;
    this.metadata = gatewayMetadata(req.headers);
  }

  /** The HTTP client went away before the answer: as grpc-js on a client cancel. */
  cancel(): void {
    if (this.#finished || this.cancelled) return;
    this.cancelled = true;
    this.#finished = true;
    super.emit('cancelled', 'cancelled');
  }

  get finished(): boolean {
    return this.#finished;
  }

  write(m: Wire | Buffer): boolean {
    if (this.#finished) return false;
    return this.#sink.message(m);
  }

  end(): void {
    this.#finish();
  }

  /** grpc-js turns an emitted 'error' into the call's status; listeners (if any) still hear it. */
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error') {
      this.#finish(args[0] as CallStatus);
      return this.listenerCount('error') > 0 ? super.emit(event, ...args) : true;
    }
    return super.emit(event, ...args);
  }

  /** Unary callback. */
  respond(err: CallStatus | null, value?: Wire | Buffer): void {
    if (this.#finished) return;
    if (err !== null) return this.#finish(err);
    this.#sink.message(value!);
    this.#finish();
  }

  #finish(status?: CallStatus): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#sink.finish(status);
  }

  getPeer(): string {
    return this.#peer;
  }

  getDeadline(): number {
    return Infinity;
  }

  getPath(): string {
    return '';
  }

  getHost(): string {
    return this.#req.headers.host ?? '';
  }

  /** As grpc-js reports it: the verified client certificate of a TLS connection (its CN is the auth user). */
  getAuthContext(): { transportSecurityType?: string; sslPeerCertificate?: tls.PeerCertificate } {
    const socket = this.#req.socket;
    if (!(socket instanceof tls.TLSSocket)) return {};
    const cert = socket.getPeerCertificate();
    return { transportSecurityType: 'ssl', ...(cert && Object.keys(cert).length > 0 ? { sslPeerCertificate: cert } : {}) };
  }

  sendMetadata(): void {}
  /** Flow control of a client stream (keep-alive requests read ahead): stop reading the HTTP body. */
  pause(): void {
    this.#req.pause();
  }

  resume(): void {
    this.#req.resume();
  }
}
