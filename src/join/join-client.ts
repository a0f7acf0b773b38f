/**
 * A would-be member asking an existing cluster something (join, the member list, its own removal) before it
 * is a member. `--server` may name any member's client URL (the join service on the client port,
 * join/join-service.ts) or peer URL (the peer transport), on any port: each attempt tries the client-port
 * service first, then the peer protocol. Every failed attempt is logged; transient failures (nothing
 * listening yet, no leader) are retried until the deadline, the others (wrong token, TLS) end at once; either
 * way the error is one sentence saying what to fix.
 */
import type * as grpc from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { joinAttemptTimeoutMs, joinRetryMsMin } from '../base/limits.js';
import { pack, unpack } from '../storage/entry-codec.js';
import { EtcdError, type EtcdErrorCode, peerRefusal } from '../node/errors.js';
import { joinServiceDefinition, replyMacParts, type JoinReply } from './join-service.js';
import type { Logger } from '../config/log.js';
import { joinsRefusedMessage } from './join-secret.js';
import type { TlsFiles } from '../config/member-options.js';
import { macEquals, tokenMac } from '../peer/handshake.js';
import { PeerTransport } from '../peer/transport.js';
import type { PeerMethod, PeerPayload, PeerResults } from '../node/peer-rpc.js';

export interface AskOptions {
  token: string;
  logger: Logger;
  electionTimeoutMs: number;
  peerTls?: TlsFiles;
  clientTls?: TlsFiles;
}

/** A failure that retrying cannot fix (wrong token, TLS): reported at once. */
class FinalError extends Error {}
/** etcd errors that are answers, not a cluster still electing or busy. */
const definitive = new Set<EtcdErrorCode>(['memberNotFound', 'peerUrlExist', 'memberBadUrls', 'memberExist']);

/** Ask any of `urls` (client or peer URLs of members), retrying transient failures until the deadline. */
export async function askCluster<M extends PeerMethod>(o: AskOptions, urls: string[], method: M, payload: PeerPayload<M>): Promise<PeerResults[M]> {
  const log = o.logger.child({ component: 'join' });
  const transport = new PeerTransport({
    // Not a member yet: a throwaway id for the handshake (the token is what authenticates us).
    selfId: randomBytes(8).readBigUInt64BE(0) | 1n,
    token: o.token,
    listenUrl: '127.0.0.1:0',
    ...(o.peerTls !== undefined ? { tls: o.peerTls } : {}),
    logger: log,
  });
  const retryMs = Math.max(joinRetryMsMin, 10 * o.electionTimeoutMs);
  const deadline = Date.now() + retryMs;
  const errors = new Map<string, unknown>();
  try {
    for (let attempt = 1; ; attempt++) {
      for (const url of urls) {
        try {
          // The member answers each method with its PeerResults type (node/peer-rpc.ts).
          return (await askOne(o, transport, url, method, payload)) as PeerResults[M];
        } catch (error) {
          if (error instanceof FinalError || (error instanceof EtcdError && definitive.has(error.code))) throw error;
          errors.set(url, error);
          log.warn(`${method} through ${url} failed (attempt ${attempt}); retrying`, { error: errorText(error) });
        }
      }
      if (Date.now() + 1000 > deadline) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
  } catch (error) {
    if (error instanceof FinalError) throw new Error(error.message);
    throw error;
  } finally {
    await transport.close();
  }
  const [url, last] = [...errors][errors.size - 1]!;
  throw new Error(`could not ${method} through ${urls.join(', ')} within ${Math.round(retryMs / 1000)} s: ${advice(url, last)}`);
}

/** One attempt at one URL: the client-port join service, then the peer protocol. */
async function askOne(o: AskOptions, transport: PeerTransport, url: string, method: string, payload: unknown): Promise<unknown> {
  let viaClient: unknown;
  try {
    return await callJoinService(o, url, method, payload);
  } catch (error) {
    if (error instanceof EtcdError || error instanceof FinalError) throw error;
    viaClient = error;
  }
  let r;
  try {
    r = await transport.request(url, { method, payload }, { timeoutMs: joinAttemptTimeoutMs });
  } catch (error) {
    if (error instanceof Error && error.name === 'PeerAuthError') throw new FinalError(tokenAdvice(url, error.message));
    if (isTlsError(error) || isTlsError(viaClient)) throw new FinalError(tlsAdvice(url, isTlsError(error) ? error : viaClient));
    // The peer protocol's error says more when something listens; the client port's when nothing does.
    throw isRefused(error) ? error : new Error(`${errorText(error)} (as a client URL: ${errorText(viaClient)})`);
  }
  if (r.ok) return r.payload;
  throw peerRefusal(r);
}

async function callJoinService(o: AskOptions, url: string, method: string, payload: unknown): Promise<unknown> {
  // Loaded on the first join only: a restarted member or witness never pays for gRPC's client (issue 24).
  const grpc = await loadGrpc();
  const u = new URL(url);
  const client = new grpc.Client(u.host, credentials(grpc, u, o), { 'grpc.enable_retries': 0 });
  const unary = (name: 'Challenge' | 'Call', request: unknown): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const d = joinServiceDefinition[name]!;
      client.makeUnaryRequest(d.path, d.requestSerialize, d.responseDeserialize, request, { deadline: Date.now() + joinAttemptTimeoutMs }, (error, value) =>
        error ? reject(error) : resolve(value),
      );
    });
  try {
    const { nonce } = (await unary('Challenge', {})) as { nonce: Uint8Array };
    const clientNonce = randomBytes(32);
    const body = pack(payload);
    const mac = tokenMac(o.token, 'client', [nonce, clientNonce, method, body]);
    const reply = (await unary('Call', { nonce, clientNonce, method, body, mac })) as JoinReply;
    const signed = macEquals(reply.mac, tokenMac(o.token, 'server', [clientNonce, nonce, ...replyMacParts(reply)]));
    if (!reply.ok && reply.auth === true) throw new FinalError(tokenAdvice(url, reply.error));
    // A refusal before our MAC was checked (an expired challenge) comes unsigned: worth another attempt.
    if (!signed && !reply.ok && !(reply.mac instanceof Uint8Array && reply.mac.length > 0)) throw new Error(String(reply.error));
    if (!signed) throw new FinalError(tokenAdvice(url, 'the member could not prove it knows the join token'));
    if (reply.ok) return unpack(reply.body);
    if (String(reply.error).startsWith(joinsRefusedMessage.slice(0, 40))) throw new FinalError(String(reply.error));
    throw peerRefusal(reply);
  } catch (error) {
    const status = (error as { code?: unknown }).code;
    if (status === grpc.status.UNIMPLEMENTED) throw new Error('the client port there has no etcetera join service (is it etcd?)');
    throw error;
  } finally {
    client.close();
  }
}

type GrpcModule = typeof import('@grpc/grpc-js');

async function loadGrpc(): Promise<GrpcModule> {
  const mod: GrpcModule & { default?: GrpcModule } = await import('@grpc/grpc-js');
  // Node gives a CommonJS package's named exports; the split CLI bundle (esbuild) gives only its default.
  return typeof mod.Client === 'function' ? mod : mod.default!;
}

function credentials(grpc: GrpcModule, u: URL, o: AskOptions): grpc.ChannelCredentials {
  if (u.protocol !== 'https:') return grpc.credentials.createInsecure();
  const ca = o.clientTls?.trustedCaFile ?? o.peerTls?.trustedCaFile;
  const pair = o.peerTls ?? o.clientTls;
  return grpc.credentials.createSsl(
    ca !== undefined ? readFileSync(ca) : null,
    pair !== undefined ? readFileSync(pair.keyFile) : null,
    pair !== undefined ? readFileSync(pair.certFile) : null,
  );
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const details = (error as { details?: unknown }).details;
    return typeof details === 'string' && details !== '' ? details : error.message;
  }
  return String(error);
}

function isRefused(error: unknown): boolean {
  return /ECONNREFUSED|connection refused/i.test(errorText(error));
}

function isTlsError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return (typeof code === 'string' && /^(ERR_SSL|ERR_TLS|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO|CERT_)/.test(code)) ||
    /ssl|tls|certificate/i.test(errorText(error));
}

function tokenAdvice(url: string, detail: string): string {
  return `the member at ${url} refused this member's join token (${detail}): give --token the cluster's token (the first member's <data-dir>/token, or its --token)`;
}

function tlsAdvice(url: string, error: unknown): string {
  return `the TLS handshake with ${url} failed (${errorText(error)}): give --peer-trusted-ca-file the CA of that member's certificates, and --peer-cert-file/--peer-key-file if it checks client certificates`;
}

/** The one sentence for the last failure of a transient kind. */
function advice(url: string, error: unknown): string {
  const text = errorText(error);
  if (isRefused(error)) return `nothing is listening at ${url} (connection refused): start that member first, or give --server the client or peer URL of a running member`;
  if (/ECONNRESET|socket hang up|closed|dropped|protocol/i.test(text) && url.startsWith('http:')) {
    return `${url} closed the connection (${text}): if that member serves TLS, give an https:// URL and --peer-trusted-ca-file`;
  }
  if (/no leader|timed out|timeout|deadline/i.test(text)) return `the cluster at ${url} did not accept the request in time (${text}): check that a majority of its members is running`;
  return text;
}
