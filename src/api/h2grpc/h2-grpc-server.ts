/**
 * A minimal gRPC server on node:http2 for a fixed set of services (issue 34): it serves the same grpc-js-style
 * service implementations (`addService(definition, implementation)`) through H2Call, and takes connections we
 * accepted ourselves (`inject`), as grpc-js' connection injector does. What it does per call is what grpc-js'
 * server does minus what etcd's services never use: no interceptors, no channelz, no compression (a request
 * with a `grpc-encoding` other than identity is refused UNIMPLEMENTED, as grpc-go refuses an unknown one),
 * no per-call metadata copies.
 *
 * Connections: etcd's --max-concurrent-streams is the HTTP/2 SETTINGS limit; --grpc-keepalive-interval and
 * -timeout are server pings (a ping unanswered within the timeout closes the connection); --grpc-keepalive-min-time
 * is the client's ping floor (ping-policy.ts: GOAWAY too_many_pings, as grpc-go). `close(graceMs)`
 * sends GOAWAY on every connection, lets open calls finish for `graceMs`, then destroys what is left.
 */
import * as http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import type { ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import { H2Call } from './h2-call.js';
import { encodeStatusMessage } from './call-headers.js';
import { MethodTable, refusedEncoding, startCall, unimplementedStatus } from './method-table.js';
import { keepSessionAlive } from './keepalive.js';
import type { PingPolicy } from './ping-policy.js';
import { watchSession } from './session-ping-policy.js';
import { CallDeadlines } from './call-deadlines.js';
import { checkServerOptions, type GrpcServerOptions } from './server-options.js';
import { realScheduler } from '../../node/driver/real-scheduler.js';

export class H2GrpcServer {
  readonly #methods = new MethodTable();
  readonly #http2: http2.Http2Server;
  readonly #sessions = new Set<http2.ServerHttp2Session>();
  readonly #pingPolicies = new WeakMap<http2.Http2Session, PingPolicy>();
  readonly #messageBytesMax: number;
  /** Every call's grpc-timeout, on one timer (call-deadlines.ts). */
  readonly #deadlines: CallDeadlines;
  #closing = false;

  constructor(options: GrpcServerOptions) {
    checkServerOptions('H2GrpcServer', options);
    this.#messageBytesMax = options.messageBytesMax;
    this.#deadlines = new CallDeadlines(options.scheduler ?? realScheduler);
    const streamsMax = options.concurrentStreamsMax;
    this.#http2 = http2.createServer({
      // grpc-js' choices: messages are limited per call, not by nghttp2's session memory or header block size.
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
      maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER,
      ...(streamsMax !== undefined && streamsMax < 2 ** 32 - 1 ? { settings: { maxConcurrentStreams: streamsMax } } : {}),
    });
    const intervalMs = options.keepAliveIntervalMs ?? 0;
    const pingTimeoutMs = options.keepAliveTimeoutMs ?? 20_000;
    const pingFloorMs = options.keepAliveMinTimeMs ?? 0;
    this.#http2.on('session', (session: http2.ServerHttp2Session) => {
      // A session's errors end that connection only (its streams see 'close').
      session.on('error', ignore);
      this.#sessions.add(session);
      session.once('close', () => this.#sessions.delete(session));
      if (this.#closing) return void session.close();
      if (intervalMs > 0) keepSessionAlive(session, intervalMs, pingTimeoutMs);
      if (pingFloorMs > 0) this.#pingPolicies.set(session, watchSession(session, pingFloorMs));
    });
    this.#http2.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => this.#dispatch(stream, headers));
  }

  /** grpc-js' Server.addService shape, so metrics (instrumentGrpcServer) wrap it the same way. */
  addService(service: ServiceDefinition, implementation: UntypedServiceImplementation): void {
    this.#methods.add(service, implementation);
  }

  /** Serves an accepted connection (a socket, or a Duplex over one), whose first bytes are the HTTP/2 preface. */
  inject(connection: Duplex): void {
    if (this.#closing) return void connection.destroy();
    this.#http2.emit('connection', connection);
  }

  /**
   * GOAWAY to every connection; open calls have `graceMs` to finish, then their connections are destroyed.
   * Resolves true when it had to destroy some.
   */
  close(graceMs: number): Promise<boolean> {
    this.#closing = true;
    const sessions = [...this.#sessions];
    if (sessions.length === 0) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let open = sessions.length;
      const closed = (): void => {
        if (--open === 0) {
          clearTimeout(force);
          resolve(false);
        }
      };
      const force = setTimeout(() => {
        for (const s of sessions) s.destroy();
        resolve(true);
      }, graceMs);
      for (const s of sessions) {
        if (s.closed || s.destroyed) closed();
        else s.close(closed);
      }
    });
  }

  #dispatch(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    // Every stream has an error handler: a reset or a lost connection ends that call only ('close' follows).
    stream.on('error', ignore);
    const contentType = headers['content-type'];
    if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, { endStream: true });
      return;
    }
    const path = headers[':path'] ?? '';
    const method = this.#methods.get(path);
    const refused = method === undefined ? unimplementedStatus(path) : refusedEncoding(headers['grpc-encoding']);
    if (refused !== undefined) return trailersOnly(stream, refused.code, refused.details);
    const call = new H2Call(stream, headers, method!, this.#messageBytesMax, this.#pingPolicies.get(stream.session!));
    startCall(call, method!, headers['grpc-timeout'], this.#deadlines);
  }
}

/** A stream's or session's error listener: the error ends that stream or connection only ('close' follows). */
function ignore(): void {}

function trailersOnly(stream: http2.ServerHttp2Stream, status: number, details: string): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(status), 'grpc-message': encodeStatusMessage(details) }, { endStream: true });
}
