/**
 * etcd's gRPC gateway on the client port: POST /v3/<service>/<method> with the request as JSON, answered as
 * JSON (see json-codec.ts); streams (watch, lease keep-alive, snapshot, election observe) answer one
 * `{"result": ...}` line per message, and read a body of successive JSON objects. Each request goes to the
 * gRPC service handler itself through a GatewayCall, so validation, errors and semantics are gRPC's.
 *
 * Errors are grpc-gateway v1's: `{"error": msg, "message": msg, "code": grpcCode}` with its HTTP status
 * (400 for InvalidArgument/OutOfRange, 404 NotFound, 412 FailedPrecondition, 503 Unavailable, ...); inside a
 * stream, a last line `{"error": {"grpc_code", "http_code", "message", "http_status"}}`.
 */
import type * as http from 'node:http';
import type { MethodDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import { Status } from '../grpc-status.js';
import type protobuf from 'protobufjs';
import { assert, AssertionError } from '../../base/assert.js';
import { protoRoot, serviceDefinition, tooDeepRequest, type Wire } from '../grpc/proto.js';
import { GatewayCall, type CallStatus } from './gateway-call.js';
import { JsonDepthError, JsonRequestError, jsonToBytes, messageToJson } from './json-codec.js';
import { JsonObjectSplitter } from './json-stream.js';
import { BodyCutError, readBody } from './request-body.js';
import { readingGatewayBody } from './client-errors.js';
import { isGatewayPath, routeOf } from './routes.js';
import { answerStatus, corsHeaders, jsonHeaders } from './gateway-answers.js';

type Method = MethodDefinition<Wire | Buffer, Wire | Buffer>;

export type GatewayHandler = (req: http.IncomingMessage, res: http.ServerResponse) => boolean;

/** `services`: the implementations the gRPC server runs, by full service name. */
export function createGateway(services: ReadonlyMap<string, UntypedServiceImplementation>): GatewayHandler {
  return (req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    if (!isGatewayPath(pathname)) return false;
    const route = routeOf(pathname);
    const impl = route && services.get(route.service)?.[route.method];
    if (route === undefined || impl === undefined) {
      plain(res, 404, 'Not Found\n');
      return true;
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(200, corsHeaders).end();
      return true;
    }
    if (req.method !== 'POST') {
      plain(res, 405, 'Method Not Allowed\n');
      return true;
    }
    const method = serviceDefinition(route.service)[route.method] as Method;
    const exchange = new Exchange(req, res, method);
    if (method.requestStream) exchange.clientStream(impl as unknown as (call: GatewayCall) => void);
    // single() settles every failure of the request itself; what still rejects is a broken invariant.
    else void exchange.single(impl as Function);
    return true;
  };
}

function plain(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { ...corsHeaders, 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }).end(body);
}

/** One HTTP request/response carrying one gRPC call. */
class Exchange {
  readonly #req: http.IncomingMessage;
  readonly #res: http.ServerResponse;
  readonly #method: Method;
  readonly #requestType: protobuf.Type;
  readonly #responseType: protobuf.Type;
  #call: GatewayCall | undefined;

  constructor(req: http.IncomingMessage, res: http.ServerResponse, method: Method) {
    this.#req = req;
    this.#res = res;
    this.#method = method;
    this.#requestType = typeOf(method, 'request');
    this.#responseType = typeOf(method, 'response');
    res.on('close', () => this.#call?.cancel());
  }

  /** A unary or server-streaming call: the body is one JSON object (empty: all defaults). */
  async single(impl: Function): Promise<void> {
    let request: Wire;
    readingGatewayBody(this.#req.socket, true);
    try {
      request = this.#decode(await readBody(this.#req));
    } catch (err) {
      return this.#fail(err);
    } finally {
      readingGatewayBody(this.#req.socket, false);
    }
    const call = this.#open(request);
    if (this.#method.responseStream) impl(call);
    else impl(call, (err: CallStatus | null, value?: Wire | Buffer) => call.respond(err, value));
  }

  /** Watch and LeaseKeepAlive: each JSON object of the body is one request message; the body's end half-closes. */
  clientStream(impl: (call: GatewayCall) => void): void {
    const call = this.#open({});
    impl(call);
    const splitter = new JsonObjectSplitter();
    this.#req.on('data', (chunk: Buffer) => {
      if (call.finished) return;
      try {
        for (const json of splitter.push(chunk)) {
          call.emit('data', this.#decode(json));
        }
      } catch (err) {
        // The gateway stops reading a body it cannot parse; what was read stays in effect.
        if (!(err instanceof JsonRequestError)) throw err;
        this.#req.pause();
      }
    });
    this.#req.on('end', () => !call.finished && call.emit('end'));
    // A cut body (client gone, broken chunked framing): the response's 'close' cancels the call.
    this.#req.on('error', () => this.#res.destroy());
  }

  #open(request: Wire): GatewayCall {
    const streaming = this.#method.responseStream;
    const call = new GatewayCall(this.#req, request, {
      message: (m) => {
        const json = this.#responseJson(m);
        if (json === undefined) return false;
        if (!streaming) {
          this.#res.writeHead(200, { ...jsonHeaders, 'content-length': Buffer.byteLength(json) });
          return this.#res.write(json);
        }
        if (!this.#res.headersSent) this.#res.writeHead(200, jsonHeaders);
        return this.#res.write(`{"result":${json}}\n`);
      },
      finish: (status) => this.#finish(status),
    });
    this.#res.on('drain', () => call.emit('drain'));
    this.#call = call;
    return call;
  }

  /**
   * A response message as JSON; undefined (the call ended INTERNAL, as grpc-js ends a gRPC call whose answer
   * it cannot encode) when protobufjs refuses it, e.g. past its nesting depth. This runs inside the handler's
   * answer callback, where a throw would escape every catch.
   */
  #responseJson(m: Wire | Buffer): string | undefined {
    try {
      return JSON.stringify(messageToJson(this.#responseType, this.#method.responseDeserialize(this.#method.responseSerialize(m))));
    } catch (err) {
      if (err instanceof AssertionError) throw err;
      this.#finish({ code: Status.INTERNAL, details: 'Error serializing response' });
      return undefined;
    }
  }

  #finish(status?: CallStatus): void {
    const res = this.#res;
    if (res.writableEnded || res.destroyed) return;
    if (status === undefined || status.code === Status.OK) {
      if (!res.headersSent) res.writeHead(200, jsonHeaders);
      res.end();
      return;
    }
    answerStatus(res, status);
  }

  /** A request that cannot be served: a bad one is answered 400, a cut one ends with its connection. */
  #fail(err: unknown): void {
    if (err instanceof BodyCutError) {
      this.#res.destroy();
      return;
    }
    if (!(err instanceof JsonRequestError)) throw err;
    this.#finish({ code: Status.INVALID_ARGUMENT, details: err.message });
  }

  #decode(json: unknown): Wire {
    let bytes: Buffer;
    try {
      bytes = jsonToBytes(this.#requestType, json);
    } catch (err) {
      // A txn nested past what we decode is past etcd's op budget too: the handler answers it as etcd does.
      const marker = err instanceof JsonDepthError ? tooDeepRequest(this.#requestType) : undefined;
      if (marker === undefined) throw err;
      return marker;
    }
    try {
      return this.#method.requestDeserialize(bytes) as Wire;
    } catch (err) {
      // Bytes we just encoded, yet refused: what the client sent decides that, so it ends this request only.
      if (err instanceof AssertionError) throw err;
      throw new JsonRequestError((err as Error).message);
    }
  }
}

function typeOf(method: Method, which: 'request' | 'response'): protobuf.Type {
  // grpc-js definitions keep only functions; the message types come from the loaded protos.
  const [, service, name] = method.path.split('/');
  const m = protoRoot().lookupService(service!).methods[name!]!;
  m.resolve();
  const type = which === 'request' ? m.resolvedRequestType : m.resolvedResponseType;
  assert(type !== null, `unresolved ${which} type of ${method.path}`);
  return type;
}
