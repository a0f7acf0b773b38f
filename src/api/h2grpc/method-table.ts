/**
 * The methods a gRPC server of ours serves (grpc-js' `addService(definition, implementation)` shape, so
 * metrics wrap both servers the same way) and how a call starts once its method is known: its deadline from
 * `grpc-timeout`, then its handler by kind (unary and server-streaming read their one request first). Shared
 * by the server on node:http2 (h2-grpc-server.ts) and the one on our own frames (src/api/h2frames).
 */
import type { MethodDefinition, ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import { code, type CallStatus } from './server-call.js';
import { timeoutMs } from './call-headers.js';
import type { CallDeadlines } from './call-deadlines.js';

type Kind = 'unary' | 'serverStream' | 'clientStream' | 'bidi';

export interface Method {
  kind: Kind;
  deserialize(bytes: Buffer): unknown;
  serialize(value: unknown): Buffer;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  handler: (...args: any[]) => void;
}

/** What starting a call needs of it (H2Call and FramesCall both are one). */
export interface StartableCall {
  setDeadline(deadlines: CallDeadlines, ms: number): void;
  readOne(onRequest: (request: unknown) => void): void;
  readStream(): void;
  respond(err: unknown, value?: unknown): void;
  sendStatus(status: CallStatus): boolean;
}

function kindOf(def: MethodDefinition<unknown, unknown>): Kind {
  if (def.requestStream) return def.responseStream ? 'bidi' : 'clientStream';
  return def.responseStream ? 'serverStream' : 'unary';
}

export class MethodTable {
  readonly #methods = new Map<string, Method>();

  add(service: ServiceDefinition, implementation: UntypedServiceImplementation): void {
    for (const [name, def] of Object.entries(service)) {
      const handler = implementation[name] ?? implementation[def.originalName ?? ''];
      if (handler === undefined) continue;
      if (this.#methods.has(def.path)) throw new Error(`gRPC server: method ${def.path} added twice`);
      this.#methods.set(def.path, {
        kind: kindOf(def),
        deserialize: def.requestDeserialize as (b: Buffer) => unknown,
        serialize: def.responseSerialize as (v: unknown) => Buffer,
        handler: handler as Method['handler'],
      });
    }
  }

  get(path: string): Method | undefined {
    return this.#methods.get(path);
  }
}

/** The status for a request naming a method we do not serve (grpc-go's words). */
export function unimplementedStatus(path: string): CallStatus {
  return { code: code.unimplemented, details: `The server does not implement the method ${path}` };
}

/** The status refusing a request's `grpc-encoding`, or undefined when it is identity or absent. */
export function refusedEncoding(encoding: string | string[] | undefined): CallStatus | undefined {
  if (encoding === undefined || encoding === 'identity') return undefined;
  return { code: code.unimplemented, details: `grpc: Decompressor is not installed for grpc-encoding "${String(encoding)}"` };
}

/** Sets the call's deadline from `grpc-timeout` (an invalid one ends it INTERNAL) and runs its handler. */
export function startCall(call: StartableCall, method: Method, grpcTimeout: string | string[] | undefined, deadlines: CallDeadlines): void {
  const deadlineMs = timeoutMs(grpcTimeout);
  if (deadlineMs !== undefined) {
    if (Number.isNaN(deadlineMs)) return void call.sendStatus({ code: code.internal, details: `Invalid grpc-timeout value "${String(grpcTimeout)}"` });
    call.setDeadline(deadlines, deadlineMs);
  }
  const handler = method.handler;
  switch (method.kind) {
    case 'unary':
      return call.readOne(() => handler(call, (err: unknown, value?: unknown) => call.respond(err, value)));
    case 'serverStream':
      return call.readOne(() => handler(call));
    case 'clientStream':
      call.readStream();
      return handler(call, (err: unknown, value?: unknown) => call.respond(err, value));
    case 'bidi':
      call.readStream();
      return handler(call);
  }
}
