/**
 * etcetera's own join service on the client port (`/etcetera.v1.Join/*`), so `--server` works with the URL
 * every user has: a member's client URL (k3s joins through its supervisor port the same way). A peer URL
 * still works through the peer transport; the joining side tries both (join-client.ts).
 *
 * Authenticated by the join token without sending it, as the peer handshake (handshake.ts):
 *
 *   client → Challenge {}                                   server → { nonce: Ns }   (stateless, join-challenges.ts)
 *   client → Call { nonce: Ns, clientNonce: Nc, method, body, mac: HMAC(token, "client" Ns Nc method body) }
 *   server → { ok, body | error, code, mac: HMAC(token, "server" Nc Ns ok body|error) }
 *
 * Ns serves one Call, within joinChallengeTtlMs. A Call whose MAC is wrong (or whose Ns is not ours) gets an
 * unsigned refusal: the server signs only for a caller that proved the token.
 *
 * Only the requests a would-be member needs are served: join, members, and memberRemove, which removes only
 * a learner that never started (a joiner that failed to start after it was added removes itself).
 */
import type * as grpc from '@grpc/grpc-js';
import { joinChallengesMax, joinChallengeTtlMs } from '../base/limits.js';
import { pack, unpack } from '../storage/entry-codec.js';
import { macEquals, tokenMac } from '../peer/handshake.js';
import { JoinChallenges } from './join-challenges.js';

export const joinServicePath = '/etcetera.v1.Join';
export const joinMethods = new Set(['join', 'members', 'memberRemove']);
const nonceBytes = 32;

export interface JoinCall {
  nonce: Uint8Array;
  clientNonce: Uint8Array;
  method: string;
  body: Uint8Array;
  mac: Uint8Array;
}

type Unsigned = { ok: true; body: Uint8Array } | { ok: false; error: string; code?: string; auth?: boolean };
export type JoinReply = Unsigned & { mac: Uint8Array };

/** The signed part of a reply: what the MAC covers. */
export function replyMacParts(reply: { ok: boolean; body?: Uint8Array; error?: string; code?: string }): Array<Uint8Array | string> {
  return reply.ok ? ['ok', reply.body ?? new Uint8Array(0)] : ['error', reply.error ?? '', reply.code ?? ''];
}

const toBuffer = (value: unknown): Buffer => {
  const bytes = pack(value);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
};
const fromBuffer = (bytes: Buffer): unknown => unpack(bytes);

function method(name: string): grpc.MethodDefinition<unknown, unknown> {
  return {
    path: `${joinServicePath}/${name}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: toBuffer,
    requestDeserialize: fromBuffer,
    responseSerialize: toBuffer,
    responseDeserialize: fromBuffer,
  };
}

export const joinServiceDefinition: grpc.ServiceDefinition = { Challenge: method('Challenge'), Call: method('Call') };

export interface JoinServiceHost {
  token: string;
  /** Serves one request as the peer transport would (forwarded to the leader when needed). */
  handle(method: string, payload: unknown): Promise<unknown>;
  /** An error to its (message, etcd code); undefined code for a plain error. */
  describeError(error: unknown): { error: string; code?: string };
}

export function joinService(host: JoinServiceHost): grpc.UntypedServiceImplementation {
  const challenges = new JoinChallenges({ ttlMs: joinChallengeTtlMs, usedMax: joinChallengesMax });
  const sign = (clientNonce: Uint8Array, nonce: Uint8Array, reply: Unsigned): JoinReply => ({
    ...reply,
    mac: tokenMac(host.token, 'server', [clientNonce, nonce, ...replyMacParts(reply)]),
  });
  /**
   * A caller that has not proved the token gets no MAC: a reply keyed with the token over data the caller
   * chose would let it test guesses at the token offline (issue 20, item 4).
   */
  const refuse = (error: string, auth: boolean): JoinReply => ({ ok: false, error, auth, mac: new Uint8Array(0) });

  const challenge: grpc.handleUnaryCall<unknown, unknown> = (_call, callback) => {
    callback(null, { nonce: challenges.issue() });
  };

  const call: grpc.handleUnaryCall<unknown, unknown> = (c, callback) => {
    const req = (typeof c.request === 'object' && c.request !== null ? c.request : {}) as Partial<JoinCall>;
    const { nonce, clientNonce, body } = req;
    const method = String(req.method);
    if (!(clientNonce instanceof Uint8Array) || clientNonce.length !== nonceBytes || !(body instanceof Uint8Array)) {
      callback(null, refuse('malformed join call', false));
      return;
    }
    if (!challenges.issuedAndFresh(nonce)) {
      callback(null, refuse('join challenge expired or unknown', false));
      return;
    }
    if (!macEquals(req.mac, tokenMac(host.token, 'client', [nonce, clientNonce, method, body]))) {
      callback(null, refuse("authentication failed: the joining member does not know this cluster's join token", true));
      return;
    }
    if (!challenges.consume(nonce)) {
      callback(null, sign(clientNonce, nonce, { ok: false, error: 'join challenge already used, or too many joins at once: retry' }));
      return;
    }
    if (!joinMethods.has(method)) {
      callback(null, sign(clientNonce, nonce, { ok: false, error: `unknown join method ${method}` }));
      return;
    }
    // A joiner's memberRemove may only remove its own learner before it started (cluster-ops.ts leaveUnstarted).
    host.handle(method === 'memberRemove' ? 'leaveUnstarted' : method, unpack(body)).then(
      (result) => callback(null, sign(clientNonce, nonce, { ok: true, body: pack(result) })),
      (error: unknown) => callback(null, sign(clientNonce, nonce, { ok: false, ...host.describeError(error) })),
    );
  };
  return { Challenge: challenge, Call: call };
}
