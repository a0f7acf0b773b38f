/**
 * Our gRPC server on our own HTTP/2 frames (issue 34): the same services, options and surface as h2grpc's
 * H2GrpcServer (addService, inject, close), with node:http2 replaced by h2-connection.ts. A unary call costs
 * one socket write and no Node stream objects; see h2-connection.ts for what HTTP/2 it speaks.
 *
 * `close(graceMs)` sends GOAWAY on every connection, lets open calls finish for `graceMs`, then destroys
 * what is left, as H2GrpcServer does.
 */
import type { Duplex } from 'node:stream';
import type { ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import { checkServerOptions, type GrpcServerOptions } from '../h2grpc/server-options.js';
import { MethodTable, refusedEncoding, startCall, unimplementedStatus } from '../h2grpc/method-table.js';
import { CallDeadlines } from '../h2grpc/call-deadlines.js';
import { PingPolicy, tooManyPings } from '../h2grpc/ping-policy.js';
import { encodeStatusMessage } from '../h2grpc/call-headers.js';
import { realScheduler } from '../../node/driver/real-scheduler.js';
import { H2Connection } from './h2-connection.js';
import type { H2Stream } from './h2-stream.js';
import { FramesCall } from './frames-call.js';
import { errorCode } from './frame-format.js';
import { httpStatusBlock, trailersOnlyBlock } from './response-headers.js';

export class FramesGrpcServer {
  readonly #methods = new MethodTable();
  readonly #connections = new Set<H2Connection>();
  readonly #messageBytesMax: number;
  readonly #deadlines: CallDeadlines;
  readonly #concurrentStreamsMax: number | undefined;
  readonly #keepAliveIntervalMs: number;
  readonly #keepAliveTimeoutMs: number;
  readonly #pingFloorMs: number;
  readonly #policies = new WeakMap<H2Connection, PingPolicy>();
  #closing = false;

  constructor(options: GrpcServerOptions) {
    checkServerOptions('FramesGrpcServer', options);
    this.#messageBytesMax = options.messageBytesMax;
    this.#deadlines = new CallDeadlines(options.scheduler ?? realScheduler);
    const streamsMax = options.concurrentStreamsMax;
    this.#concurrentStreamsMax = streamsMax !== undefined && streamsMax < 2 ** 32 - 1 ? streamsMax : undefined;
    this.#keepAliveIntervalMs = options.keepAliveIntervalMs ?? 0;
    this.#keepAliveTimeoutMs = options.keepAliveTimeoutMs ?? 20_000;
    this.#pingFloorMs = options.keepAliveMinTimeMs ?? 0;
  }

  addService(service: ServiceDefinition, implementation: UntypedServiceImplementation): void {
    this.#methods.add(service, implementation);
  }

  /** Serves an accepted connection (a socket, or a Duplex over one), whose first bytes are the HTTP/2 preface. */
  inject(socket: Duplex): void {
    if (this.#closing) return void socket.destroy();
    let connection: H2Connection | undefined;
    const pingPolicy = this.#pingFloorMs > 0 ? new PingPolicy(this.#pingFloorMs, () => connection?.fail(errorCode.enhanceYourCalm, tooManyPings)) : undefined;
    connection = new H2Connection(socket, {
      concurrentStreamsMax: this.#concurrentStreamsMax,
      keepAliveIntervalMs: this.#keepAliveIntervalMs,
      keepAliveTimeoutMs: this.#keepAliveTimeoutMs,
      pingPolicy,
      onStream: (stream, conn) => this.#dispatch(stream, conn),
    });
    if (pingPolicy !== undefined) this.#policies.set(connection, pingPolicy);
    const c = connection;
    this.#connections.add(c);
    c.onceClosed(() => this.#connections.delete(c));
  }

  /**
   * GOAWAY to every connection; open calls have `graceMs` to finish, then their connections are destroyed.
   * Resolves true when it had to destroy some.
   */
  close(graceMs: number): Promise<boolean> {
    this.#closing = true;
    const connections = [...this.#connections].filter((c) => !c.ended);
    if (connections.length === 0) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let open = connections.length;
      const force = setTimeout(() => {
        for (const c of connections) c.destroy();
        resolve(true);
      }, graceMs);
      for (const c of connections) {
        c.onceClosed(() => {
          if (--open > 0) return;
          clearTimeout(force);
          resolve(false);
        });
        c.goAway();
      }
    });
  }

  #dispatch(stream: H2Stream, connection: H2Connection): void {
    const headers = stream.headers;
    const contentType = headers['content-type'];
    if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) return stream.end(httpStatusBlock(415));
    const path = headers[':path'];
    const method = typeof path === 'string' ? this.#methods.get(path) : undefined;
    const refused = method === undefined ? unimplementedStatus(String(path ?? '')) : refusedEncoding(headers['grpc-encoding']);
    if (refused !== undefined) return stream.end(trailersOnlyBlock(refused.code, encodeStatusMessage(refused.details)));
    const call = new FramesCall(stream, connection.socket, method!, this.#messageBytesMax, this.#policies.get(connection));
    startCall(call, method!, headers['grpc-timeout'], this.#deadlines);
  }
}
