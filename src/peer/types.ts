/** Public types of the peer transport. */
import type { MemberVersion } from '../base/version.js';
import type { TlsPolicy } from '../config/member-options.js';
import type { TlsFiles } from '../config/tls-files.js';
import type { Message, NodeId, Snapshot } from '../raft/types.js';
import type { Logger } from '../config/log.js';

/** A one-shot RPC between members (join requests, forwarded member operations, …). Payload is msgpack-able. */
export interface PeerRequest {
  method: string;
  payload?: unknown;
}

export type PeerResponse = { ok: true; payload?: unknown } | { ok: false; error: string; code?: string };

export interface PeerRequestInfo {
  /** The caller's member id as it claimed in the authenticated handshake (0n for a not-yet-member). */
  from: NodeId;
  remoteAddress: string;
}

/** Peer TLS, from --peer-cert-file, --peer-key-file, --peer-trusted-ca-file, --peer-client-cert-auth. */
export interface PeerTlsOptions extends TlsFiles {
  /** etcd --cipher-suites, --tls-min-version, --tls-max-version. */
  policy?: TlsPolicy;
}

/**
 * Where a received snapshot's bytes go as they arrive (bounded memory: a file, not a buffer). `open` is
 * called with the MsgSnap's metadata; `commit` makes the bytes durable before the message reaches Raft. The
 * transport owns this port; the member implements it (src/storage/snapshot-data.ts), as etcd's rafthttp hands
 * snapshots to a snap.Snapshotter it is given.
 */
export interface SnapshotSink {
  open(message: Message): Promise<{
    write(chunk: Uint8Array): Promise<void>;
    commit(): Promise<void>;
    abort(): Promise<void>;
  }>;
}

export interface PeerTransportOptions {
  selfId: NodeId;
  /** 0n (or absent) until known; when both sides know theirs, a mismatch refuses the connection. */
  clusterId?: bigint;
  /** The cluster join token. Never sent: each side proves it knows it with an HMAC of the other's nonce. */
  token: string;
  /** This member's build and data format, announced in every handshake (see PeerTransport.peerVersions). */
  version?: MemberVersion;
  /** host:port or http(s)://host:port to listen on (port 0 picks a free port). */
  listenUrl: string;
  /** More URLs to listen on (etcd --listen-peer-urls beyond the first). */
  alsoListenUrls?: string[];
  tls?: PeerTlsOptions;
  logger: Logger;
  /** Messages to `id` were dropped (queue full or link down): Raft should move the peer to probe. */
  onUnreachable?(id: NodeId): void;
  /**
   * Our outbound stream to `id` was refused after authentication failed or the peer rejected us (wrong token,
   * cluster or member id, or `authorizePeer` on its side, e.g. "the member was removed from the cluster").
   * Called on every refused attempt; the stream keeps retrying at the capped backoff.
   */
  onPeerRefused?(id: NodeId, refusal: PeerRefusal): void;
  /** Outcome of a snapshot sent to `id` (Raft's ReportSnapshot). */
  onSnapshotStatus?(id: NodeId, ok: boolean): void;
  /** Overrides for tests; defaults from src/base/limits.ts. */
  limits?: Partial<PeerTransportLimits>;
}

/**
 * What serves the peers' connections to us. Given to `serve()` once the node that answers them exists: a member
 * binds its peer port first (its URL is part of the member it builds) and serves it once that member is built.
 */
export interface PeerInbound {
  onMessages(msgs: Message[]): void;
  /**
   * A snapshot arrived whole. `message` is its MsgSnap with `snapshot` attached. The sender is told the
   * snapshot succeeded when the returned promise resolves (failed if it rejects). Default: onMessages([message]).
   */
  onSnapshot?(from: NodeId, snapshot: Snapshot, message: Message): void | Promise<void>;
  /** Without one, a received snapshot is gathered in memory and attached to the MsgSnap as its data. */
  snapshotSink?: SnapshotSink;
  onRequest?(req: PeerRequest, info: PeerRequestInfo): Promise<PeerResponse>;
  /** Return why to refuse an authenticated peer (e.g. a removed member), or undefined to accept. */
  authorizePeer?(from: NodeId): PeerRefusal | undefined;
}

export interface PeerTransportLimits {
  queueMessagesMax: number;
  queueBytesMax: number;
  batchBytesMax: number;
  socketBufferedBytesMax: number;
  snapshotChunkBytes: number;
  inboundConnectionsMax: number;
  reconnectDelayMsMin: number;
  reconnectDelayMsMax: number;
  handshakeTimeoutMs: number;
  snapshotAckTimeoutMs: number;
  requestTimeoutMs: number;
}

/** Counters per peer, monotonic except `connected`. */
export interface PeerStats {
  connected: boolean;
  bytesSent: number;
  bytesReceived: number;
  messagesSent: number;
  messagesReceived: number;
  framesSent: number;
  framesReceived: number;
  /** Messages dropped (queue full, link down, or lost with a broken connection). */
  sendFailures: number;
  reconnects: number;
  /** Times an open stream to the peer was lost (etcd_network_disconnected_peers_total). */
  disconnects: number;
  snapshotsSent: number;
  snapshotsReceived: number;
  snapshotFailures: number;
}

export function emptyPeerStats(): PeerStats {
  return {
    connected: false,
    bytesSent: 0,
    bytesReceived: 0,
    messagesSent: 0,
    messagesReceived: 0,
    framesSent: 0,
    framesReceived: 0,
    sendFailures: 0,
    reconnects: 0,
    disconnects: 0,
    snapshotsSent: 0,
    snapshotsReceived: 0,
    snapshotFailures: 0,
  };
}

/**
 * Why a handshake was refused, sent beside the sentence in the Refused frame so the other side acts on the
 * code, never on the wording. `unknown`: a peer that sent no code.
 */
export type PeerRefusalCode = 'badToken' | 'clusterMismatch' | 'memberMismatch' | 'removed' | 'unknown';

export interface PeerRefusal {
  code: PeerRefusalCode;
  reason: string;
}

const refusalCodes: ReadonlySet<string> = new Set<PeerRefusalCode>(['badToken', 'clusterMismatch', 'memberMismatch', 'removed']);

export function peerRefusalCode(value: unknown): PeerRefusalCode {
  return typeof value === 'string' && refusalCodes.has(value) ? (value as PeerRefusalCode) : 'unknown';
}

/** A refused handshake (wrong token, cluster id or member id); retrying will not help until config changes. */
export class PeerAuthError extends Error {
  override name = 'PeerAuthError';
  readonly code: PeerRefusalCode;

  constructor(message: string, code: PeerRefusalCode) {
    super(message);
    this.code = code;
  }
}
