/**
 * What every handler shares: the request context (require-leader metadata, cancellation), the unary wrapper
 * that maps thrown errors to etcd's statuses, and ending a stream with an etcd error.
 */
import type { EventEmitter } from 'node:events';
import { Status } from '../grpc-status.js';
import type { Metadata, ServerUnaryCall, handleUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import type { EtcdApi, RequestContext } from '../../node/server-api.js';
import { EtcdError } from '../../node/errors.js';
import { toGrpcError } from './grpc-error.js';
import { peerSource } from './peer-source.js';
import { repairedCommonName, repairedConnectionHeader } from '../http2/repaired-peers.js';
import type { Wire } from './proto.js';

/** etcd's rpctypes.MetadataRequireLeaderKey / MetadataHasLeader. */
export const requireLeaderKey = 'hasleader';
const requireLeaderValue = 'true';

interface Cancellable extends EventEmitter {
  metadata: Metadata;
  cancelled: boolean;
  getAuthContext?(): { sslPeerCertificate?: { subject?: { CN?: string | string[] } } };
  getPeer?(): string;
}

/** etcd's rpctypes.TokenFieldNameGRPC, then TokenFieldNameSwagger (the gateway's header). */
function tokenOf(metadata: Metadata): string | undefined {
  const v = metadata.get('token');
  const w = v.length > 0 ? v : metadata.get('authorization');
  return w.length > 0 && typeof w[0] === 'string' ? w[0] : undefined;
}

/**
 * grpc-js reports a peer certificate only for a verified TLS connection it holds itself; a connection the
 * authority repair wraps has its common name found by the tag on each of its requests.
 */
function certCommonName(call: Cancellable): string | undefined {
  const cn = call.getAuthContext?.().sslPeerCertificate?.subject?.CN;
  if (cn !== undefined) return Array.isArray(cn) ? cn[0] : cn;
  return repairedCommonName(call.metadata.get(repairedConnectionHeader));
}

export function requiresLeader(metadata: Metadata): boolean {
  const v = metadata.get(requireLeaderKey);
  return v.length > 0 && v[0] === requireLeaderValue;
}

/**
 * The context of one call. grpc-js reports EVERY finished call as 'cancelled' (after its status is sent), so
 * the handler marks the call finished first, and the AbortController (and the DOMException an abort builds)
 * only exists if someone asks for the signal: both matter on the hot path.
 */
export class CallContext implements RequestContext {
  readonly requireLeader: boolean;
  readonly token: string | undefined;
  #call: Cancellable;
  #controller: AbortController | undefined;
  #cancelled = false;
  #finished = false;

  constructor(call: Cancellable) {
    this.requireLeader = requiresLeader(call.metadata);
    this.token = tokenOf(call.metadata);
    this.#call = call;
    if (call.cancelled) this.#cancelled = true;
    else call.once('cancelled', () => this.#cancel());
  }

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    if (this.#cancelled && !this.#controller.signal.aborted) this.#controller.abort();
    return this.#controller.signal;
  }

  /** Read only when auth asks (no token under --client-cert-auth): the certificate lookup is not free. */
  get certCommonName(): string | undefined {
    return certCommonName(this.#call);
  }

  /** Read only when a password is checked: most calls never need it. */
  get source(): string | undefined {
    const peer = this.#call.getPeer?.();
    return peer === undefined ? undefined : peerSource(peer);
  }

  get cancelled(): boolean {
    return this.#cancelled;
  }

  /** The answer is about to be sent: a later 'cancelled' is grpc-js closing the call, not the client. */
  finish(): void {
    this.#finished = true;
  }

  #cancel(): void {
    if (this.#finished) return;
    this.#cancelled = true;
    this.#controller?.abort();
  }
}

export function requestContext(call: Cancellable): CallContext {
  return new CallContext(call);
}

/** etcd's unary interceptor: a require-leader request on a member without a leader fails at once. */
export function checkLeader(api: EtcdApi, ctx: RequestContext): void {
  if (ctx.requireLeader && !api.hasLeader()) throw new EtcdError('noLeader');
}

/** etcd's interceptors: a learner serves only what `allowed` says (Status, serializable Range, Snapshot). */
export function checkLearner(api: EtcdApi, allowed: boolean): void {
  if (!allowed && api.isLearner?.() === true) throw new EtcdError('notSupportedForLearner');
}

/** Resolves to a wire-shaped object, or to bytes already encoded (fast-encode.ts). */
export type UnaryHandler = (req: Wire, ctx: RequestContext) => Promise<Wire | Buffer>;

/** `learnerAllowed`: whether a learner may serve this request (etcd's isRPCSupportedForLearner); default no. */
export function unary(
  api: EtcdApi,
  handler: UnaryHandler,
  learnerAllowed?: (req: Wire) => boolean,
): handleUnaryCall<Wire, Wire | Buffer> {
  return (call: ServerUnaryCall<Wire, Wire | Buffer>, callback: sendUnaryData<Wire | Buffer>) => {
    let ctx: CallContext;
    try {
      checkLearner(api, learnerAllowed?.(call.request) ?? false);
      ctx = requestContext(call);
      checkLeader(api, ctx);
    } catch (err) {
      callback(toGrpcError(err));
      return;
    }
    // A handler that is not async (Put's, to spare a promise per call: issue 34) may throw before its promise.
    let answer: Promise<Wire | Buffer>;
    try {
      answer = handler(call.request, ctx);
    } catch (err) {
      ctx.finish();
      callback(toGrpcError(err));
      return;
    }
    answer.then(
      (res) => {
        ctx.finish();
        callback(null, res);
      },
      (err: unknown) => {
        ctx.finish();
        callback(toGrpcError(err));
      },
    );
  };
}

/** Unary handler for a method etcetera does not implement: UNIMPLEMENTED at once, never a hang. */
export function unimplementedUnary(name: string): handleUnaryCall<Wire, Wire> {
  return (_call, callback) => callback(unimplemented(name));
}

export function unimplemented(name: string): { code: Status; details: string } {
  return { code: Status.UNIMPLEMENTED, details: `etcetera: ${name} is not implemented` };
}

/** Ends a server stream with the status etcd would send for `err` (grpc-js turns an 'error' event into it). */
export function failStream(stream: EventEmitter, err: unknown): void {
  stream.emit('error', toGrpcError(err));
}

/**
 * The checks etcd's stream interceptors make before a Watch or LeaseKeepAlive stream starts: learners do
 * not serve it, and a require-leader stream needs a leader. Returns the call's context, or undefined after
 * failing the stream.
 */
export function openStream(api: EtcdApi, call: Cancellable): CallContext | undefined {
  const ctx = requestContext(call);
  try {
    checkLearner(api, false);
    checkLeader(api, ctx);
  } catch (err) {
    failStream(call, err);
    return undefined;
  }
  return ctx;
}
