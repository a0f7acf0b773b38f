/**
 * Mutual authentication of a peer connection by the cluster join token, without sending the token:
 *
 *   server → Hello   { nonce: Ns, id, clusterId }
 *   client → Auth    { kind, from, to, clusterId, nonce: Nc, mac: HMAC(token, "client" Ns Nc kind from to) }
 *   server → Welcome { id, mac: HMAC(token, "server" Nc Ns id) }      or  Refused { reason }, close
 *
 * Each side proves it knows the token by a MAC over a nonce the other side chose, so a recorded handshake
 * cannot be replayed, and a client never trusts a server that merely accepted it.
 *
 * Auth and Welcome also carry the sender's build and data format (`build`, `dataFormat`): how a member learns
 * what its peers run (etcd asks each peer's /version). Builds before 0.2 send neither and ignore both.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { NodeId } from '../raft/types.js';
import { type FramedConnection } from './connection.js';
import { type Frame, FrameType, ProtocolError, decodePayload } from './frame.js';
import { hex } from '../base/hex.js';
import { parseVersion, type MemberVersion } from '../base/version.js';
import { PeerAuthError, peerRefusalCode, type PeerRefusal, type PeerRefusalCode } from './types.js';

export type StreamKind = 'raft' | 'snapshot' | 'request';
const streamKinds = new Set<string>(['raft', 'snapshot', 'request']);

const nonceBytes = 32;

export interface HandshakeIdentity {
  selfId: NodeId;
  clusterId: () => bigint;
  token: string;
  /** This member's build and data format, announced to each peer. */
  version?: MemberVersion;
  /** What a peer announced once it authenticated (undefined: a build before 0.2, which announces nothing). */
  onPeerVersion?(id: NodeId, version: MemberVersion | undefined): void;
}

/** A build string longer than this is not a version (the field comes from the network). */
const buildChars = 128;

function versionFields(identity: HandshakeIdentity): Partial<MemberVersion> {
  return identity.version === undefined ? {} : { build: identity.version.build, dataFormat: identity.version.dataFormat };
}

/** The version a peer announced in its Auth or Welcome; absent fields are a build that announces none. */
function announcedVersion(body: Record<string, unknown>): MemberVersion | undefined {
  if (body.build === undefined && body.dataFormat === undefined) return undefined;
  const { build, dataFormat } = body;
  if (typeof build !== 'string' || build.length > buildChars || parseVersion(build) === undefined) throw new ProtocolError('malformed version');
  if (typeof dataFormat !== 'number' || !Number.isSafeInteger(dataFormat) || dataFormat < 1) throw new ProtocolError('malformed version');
  return { build, dataFormat };
}

export interface AcceptedPeer {
  kind: StreamKind;
  from: NodeId;
}

/** HMAC of `parts` under the join token; also authenticates joins over the client port (join/join-service.ts). */
export function tokenMac(token: string, role: 'client' | 'server', parts: (Uint8Array | string | bigint)[]): Buffer {
  const hmac = createHmac('sha256', token);
  hmac.update(`etcetera-peer-v1/${role}`);
  for (const part of parts) {
    // Length-prefix each part so that no two different part lists produce the same MAC input.
    const bytes = part instanceof Uint8Array ? part : Buffer.from(typeof part === 'bigint' ? part.toString(10) : part);
    const length = Buffer.allocUnsafe(4);
    length.writeUInt32BE(bytes.length, 0);
    hmac.update(length);
    hmac.update(bytes);
  }
  return hmac.digest();
}

export function macEquals(a: unknown, b: Buffer): boolean {
  return a instanceof Uint8Array && a.length === b.length && timingSafeEqual(a, b);
}

function expect(frame: Frame, type: FrameType, what: string): Record<string, unknown> {
  if (frame.type === FrameType.Refused) {
    const body = decodePayload(frame) as { reason?: unknown; code?: unknown };
    throw new PeerAuthError(`refused by peer: ${String(body.reason)}`, peerRefusalCode(body.code));
  }
  if (frame.type !== type) throw new ProtocolError(`expected ${what}, got frame type ${frame.type}`);
  const body = decodePayload(frame);
  if (typeof body !== 'object' || body === null) throw new ProtocolError(`malformed ${what}`);
  return body as Record<string, unknown>;
}

function asId(value: unknown, what: string): bigint {
  if (typeof value === 'bigint') return value;
  // msgpack writes small bigints the same as numbers on some paths; accept exact integers only.
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  throw new ProtocolError(`malformed ${what}`);
}

/**
 * Server side. Resolves with the authenticated peer, or throws PeerAuthError after sending Refused.
 * `authorize` may refuse an authenticated peer (removed member) with a reason.
 */
export async function acceptHandshake(
  conn: FramedConnection,
  identity: HandshakeIdentity,
  timeoutMs: number,
  authorize?: (from: NodeId) => PeerRefusal | undefined,
): Promise<AcceptedPeer> {
  const serverNonce = randomBytes(nonceBytes);
  conn.send(FrameType.Hello, { nonce: serverNonce, id: identity.selfId, clusterId: identity.clusterId() });
  const auth = expect(await conn.nextFrame(timeoutMs, 'peer authentication'), FrameType.Auth, 'auth');
  const kind = String(auth.kind);
  const from = asId(auth.from, 'auth.from');
  const to = asId(auth.to, 'auth.to');
  const clientCluster = asId(auth.clusterId, 'auth.clusterId');
  if (!streamKinds.has(kind) || !(auth.nonce instanceof Uint8Array) || auth.nonce.length !== nonceBytes) {
    throw new ProtocolError('malformed auth');
  }
  const clientNonce = auth.nonce;
  const peerVersion = announcedVersion(auth);
  const refuse = (code: PeerRefusalCode, reason: string): never => {
    conn.refuse(code, reason);
    throw new PeerAuthError(reason, code);
  };
  if (!macEquals(auth.mac, tokenMac(identity.token, 'client', [serverNonce, clientNonce, kind, from, to]))) {
    refuse('badToken', 'authentication failed: the peer does not know this cluster\'s join token');
  }
  const ownCluster = identity.clusterId();
  if (ownCluster !== 0n && clientCluster !== 0n && ownCluster !== clientCluster) {
    refuse('clusterMismatch', `cluster ID mismatch: this member is in cluster ${hex(ownCluster)}, the peer in ${hex(clientCluster)}`);
  }
  if (to !== 0n && to !== identity.selfId) {
    refuse('memberMismatch', `member ID mismatch: this is member ${hex(identity.selfId)}, the peer expected ${hex(to)}`);
  }
  const refusal = from === 0n ? undefined : authorize?.(from);
  if (refusal !== undefined) refuse(refusal.code, refusal.reason);
  // Raised before Welcome leaves: the peer's first data frame may follow it at once.
  conn.authenticate();
  conn.send(FrameType.Welcome, { id: identity.selfId, mac: tokenMac(identity.token, 'server', [clientNonce, serverNonce, identity.selfId]), ...versionFields(identity) });
  if (from !== 0n) identity.onPeerVersion?.(from, peerVersion);
  return { kind: kind as StreamKind, from };
}

/** Client side. Resolves with the server's member id; throws PeerAuthError if refused or the server is fake. */
export async function offerHandshake(
  conn: FramedConnection,
  identity: HandshakeIdentity,
  kind: StreamKind,
  to: NodeId,
  timeoutMs: number,
): Promise<NodeId> {
  const hello = expect(await conn.nextFrame(timeoutMs, 'peer hello'), FrameType.Hello, 'hello');
  if (!(hello.nonce instanceof Uint8Array) || hello.nonce.length !== nonceBytes) throw new ProtocolError('malformed hello');
  const serverNonce = hello.nonce;
  const clientNonce = randomBytes(nonceBytes);
  const from = identity.selfId;
  conn.send(FrameType.Auth, {
    kind,
    from,
    to,
    clusterId: identity.clusterId(),
    nonce: clientNonce,
    mac: tokenMac(identity.token, 'client', [serverNonce, clientNonce, kind, from, to]),
    ...versionFields(identity),
  });
  const welcome = expect(await conn.nextFrame(timeoutMs, 'peer welcome'), FrameType.Welcome, 'welcome');
  const serverId = asId(welcome.id, 'welcome.id');
  if (!macEquals(welcome.mac, tokenMac(identity.token, 'server', [clientNonce, serverNonce, serverId]))) {
    conn.destroy();
    throw new PeerAuthError('authentication failed: the peer does not know this cluster\'s join token', 'badToken');
  }
  const peerVersion = announcedVersion(welcome);
  conn.authenticate();
  identity.onPeerVersion?.(serverId, peerVersion);
  return serverId;
}
