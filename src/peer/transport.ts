/**
 * PeerTransport: moves Raft messages, snapshots and one-shot requests between members.
 *
 * - One outbound Raft stream per peer (PeerStream): ordered, batched per event-loop turn, bounded, reconnecting.
 *   Inbound streams are the peers' outbound ones, so each direction of a pair has its own connection.
 * - Snapshots: a fresh connection each, chunked (snapshot-stream.ts). `send()` diverts MsgSnap there by itself.
 * - `request()`: a connection per call to any URL, for members and would-be members alike.
 * Every connection begins with the token handshake (handshake.ts).
 *
 * Outbound needs nothing but the options; inbound connections are answered by the PeerInbound given to serve().
 * `listen()` binds first (a member's peer URL names the bound port, and the member is built with it); peers that
 * connect before `serve()` wait, their sockets held unread.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import {
  assert,
  peerBatchBytesMax,
  peerInboundConnectionsMax,
  peerQueueBytesMax,
  peerQueueMessagesMax,
  peerRepeatedWarningIntervalMs,
  peerSocketBufferedBytesMax,
  snapshotChunkBytes,
} from '../base/index.js';
import { MessageType, type Message, type NodeId } from '../raft/types.js';
import type { Logger } from '../config/log.js';
import { RepeatedWarnings } from '../config/repeated-warnings.js';
import { acceptVerifiedClient, logRejectedHandshake } from '../tls/tls-policy.js';
import { FramedConnection, type TlsMaterial, dial, loadTls, parsePeerUrl } from './connection.js';
import { FrameType, decodeOrUndefined, decodePayload } from './frame.js';
import { type HandshakeIdentity, acceptHandshake, offerHandshake } from './handshake.js';
import { hex } from '../base/hex.js';
import { PeerStream } from './peer-stream.js';
import type { MemberVersion } from '../base/version.js';
import { receiveSnapshot, streamSnapshot } from './snapshot-stream.js';
import { probeMethod, serveRequest, validateMessages } from './inbound.js';
import {
  type PeerRequest,
  type PeerInbound,
  type PeerResponse,
  type PeerStats,
  type PeerTransportLimits,
  type PeerTransportOptions,
  emptyPeerStats,
} from './types.js';

export const defaultTransportLimits: PeerTransportLimits = {
  queueMessagesMax: peerQueueMessagesMax,
  queueBytesMax: peerQueueBytesMax,
  batchBytesMax: peerBatchBytesMax,
  socketBufferedBytesMax: peerSocketBufferedBytesMax,
  snapshotChunkBytes,
  inboundConnectionsMax: peerInboundConnectionsMax,
  reconnectDelayMsMin: 50,
  reconnectDelayMsMax: 2_000,
  handshakeTimeoutMs: 5_000,
  snapshotAckTimeoutMs: 120_000,
  requestTimeoutMs: 10_000,
};

export class PeerTransport {
  #o: PeerTransportOptions;
  #limits: PeerTransportLimits;
  #logger: Logger;
  /** Snapshot failures repeat while their cause lasts (a follower's full disk): logged once per interval. */
  #repeatedWarnings: RepeatedWarnings;
  #clusterId: bigint;
  #identity: HandshakeIdentity;
  #tls: TlsMaterial | undefined;
  #server: net.Server | undefined;
  #extraServers: net.Server[] = [];
  #peers = new Map<NodeId, PeerStream>();
  #stats = new Map<NodeId, PeerStats>();
  #inbound = new Set<FramedConnection>();
  /** The prober's connection to each peer URL, kept between probes. */
  #probeConns = new Map<string, FramedConnection>();
  #serving: PeerInbound | undefined;
  /** Connections accepted between listen() and serve(). */
  #held: net.Socket[] = [];
  /** Our own snapshot and request connections, and the calls using them: close() ends and awaits them. */
  #outbound = new Set<FramedConnection>();
  #outboundCalls = new Set<Promise<unknown>>();
  #closed = false;
  /** What each peer announced in its last handshake with us (null: a build that announces nothing). */
  #peerVersions = new Map<NodeId, MemberVersion | null>();

  constructor(options: PeerTransportOptions) {
    assert(typeof options.selfId === 'bigint' && options.selfId !== 0n, 'selfId must be a non-zero bigint');
    assert(options.token.length > 0, 'the peer transport needs a join token');
    parsePeerUrl(options.listenUrl);
    this.#o = options;
    this.#limits = { ...defaultTransportLimits, ...options.limits };
    this.#logger = options.logger.child({ component: 'transport' });
    this.#repeatedWarnings = new RepeatedWarnings(this.#logger, peerRepeatedWarningIntervalMs);
    this.#clusterId = options.clusterId ?? 0n;
    this.#identity = {
      selfId: options.selfId,
      clusterId: () => this.#clusterId,
      token: options.token,
      ...(options.version !== undefined ? { version: options.version } : {}),
      onPeerVersion: (id, version) => this.#peerVersions.set(id, version ?? null),
    };
    // Loaded here, not in start(): request() on a transport that never listens (a joining member asking to
    // be added) must present the client certificate too.
    if (options.tls !== undefined) this.#tls = loadTls(options.tls);
  }

  /**
   * The build and data format each peer announced in its latest handshake with this member, in either
   * direction (null: a build before 0.2, which announces nothing). A peer not met since this member started
   * is absent: the leader decides no cluster version while any member is.
   */
  /** Connections accepted before serve() and held for it (each until serve(), or until it closes). */
  get heldConnections(): number {
    return this.#held.length;
  }

  get peerVersions(): ReadonlyMap<NodeId, MemberVersion | null> {
    return this.#peerVersions;
  }

  /**
   * Listens on listenUrl (and alsoListenUrls: etcd --listen-peer-urls may name several, e.g. loopback and the
   * node's address, as k3s writes it). Resolves with listenUrl's bound port (useful with port 0). Connections
   * wait for serve().
   */
  async listen(): Promise<{ port: number }> {
    assert(this.#server === undefined && !this.#closed, 'transport already listening or closed');
    const port = await this.#listen(this.#o.listenUrl, (server) => (this.#server = server));
    for (const url of this.#o.alsoListenUrls ?? []) await this.#listen(url, (server) => this.#extraServers.push(server));
    return { port };
  }

  /** Answers peers' connections from now on, those waiting since listen() first. */
  serve(inbound: PeerInbound): void {
    assert(this.#serving === undefined, 'transport already serving');
    this.#serving = inbound;
    const held = this.#held;
    this.#held = [];
    for (const socket of held) this.#accept(socket);
  }

  /** listen() and serve() at once, for a node that exists before its port does. */
  async start(inbound: PeerInbound): Promise<{ port: number }> {
    const bound = await this.listen();
    this.serve(inbound);
    return bound;
  }

  async #listen(url: string, keep: (server: net.Server) => void): Promise<number> {
    const address = parsePeerUrl(url);
    const material = this.#tls;
    const onSocket = (socket: net.Socket): void => this.#accept(socket);
    const server =
      material === undefined
        ? net.createServer(onSocket)
        : tls.createServer(
            // Client certificates are verified after the handshake, so a refusal is logged with its reason.
            { cert: material.cert, key: material.key, ca: material.ca, requestCert: material.clientCertAuth, rejectUnauthorized: false, ...material.policy },
            (socket: tls.TLSSocket) => {
              if (!material.clientCertAuth || acceptVerifiedClient(socket, this.#logger, material.allowed)) onSocket(socket);
            },
          );
    keep(server);
    server.on('tlsClientError', (err: Error, socket: tls.TLSSocket) => logRejectedHandshake(this.#logger, err, socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(address.port, address.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (err) => this.#logger.error('peer listener error', { error: err }));
    const port = (server.address() as net.AddressInfo).port;
    this.#logger.info('peer transport listening', { url, port, tls: material !== undefined });
    return port;
  }

  setClusterId(clusterId: bigint): void {
    this.#clusterId = clusterId;
  }

  addPeer(id: NodeId, urls: string[]): void {
    assert(id !== this.#o.selfId, 'cannot add self as a peer');
    if (this.#closed) return;
    if (this.#peers.has(id)) return this.updatePeer(id, urls);
    for (const url of urls) parsePeerUrl(url);
    const stream = new PeerStream({
      id,
      urls,
      identity: this.#identity,
      tls: this.#tls,
      limits: this.#limits,
      stats: this.#statsFor(id),
      logger: this.#logger,
      onUnreachable: (peer) => this.#o.onUnreachable?.(peer),
      onRefused: (peer, refusal) => this.#o.onPeerRefused?.(peer, refusal),
    });
    this.#peers.set(id, stream);
  }

  updatePeer(id: NodeId, urls: string[]): void {
    for (const url of urls) parsePeerUrl(url);
    this.#peers.get(id)?.updateUrls(urls);
  }

  removePeer(id: NodeId): void {
    this.#peers.get(id)?.close();
    this.#peers.delete(id);
  }

  hasPeer(id: NodeId): boolean {
    return this.#peers.has(id);
  }

  /** Queues messages for their peers; never blocks. MsgSnap goes on its own chunked stream. */
  send(msgs: Message[]): void {
    if (this.#closed) return;
    let run: Message[] = [];
    let runTo: NodeId | undefined;
    const flushRun = (): void => {
      if (runTo !== undefined && run.length > 0) this.#sendTo(runTo, run);
      run = [];
    };
    for (const msg of msgs) {
      if (msg.type === MessageType.Snap && msg.snapshot !== undefined) {
        this.sendSnapshot(msg).catch(() => {}); // outcome reported through onSnapshotStatus
        continue;
      }
      if (msg.to !== runTo) {
        flushRun();
        runTo = msg.to;
      }
      run.push(msg);
    }
    flushRun();
  }

  /**
   * Sends a MsgSnap in chunks: its snapshot's data, or the bytes of `source` (streamed, never held whole).
   * Settles when the receiver has taken it; the outcome also goes to onSnapshotStatus.
   */
  sendSnapshot(message: Message, source?: AsyncIterable<Uint8Array>): Promise<void> {
    assert(message.type === MessageType.Snap && message.snapshot !== undefined, 'sendSnapshot needs a MsgSnap with a snapshot');
    return this.#track(this.#sendSnapshot(message, source));
  }

  async #sendSnapshot(message: Message, source: AsyncIterable<Uint8Array> | undefined): Promise<void> {
    const to = message.to;
    const stats = this.#statsFor(to);
    const report = (ok: boolean): void => this.#o.onSnapshotStatus?.(to, ok);
    let conn: FramedConnection | undefined;
    try {
      const url = this.#peerUrl(to);
      conn = await this.#dial(url, this.#limits.handshakeTimeoutMs);
      await offerHandshake(conn, this.#identity, 'snapshot', to, this.#limits.handshakeTimeoutMs);
      const before = conn.bytesWritten;
      const bytes = await streamSnapshot(conn, message, this.#limits.snapshotChunkBytes, this.#limits.snapshotAckTimeoutMs, source);
      stats.bytesSent += conn.bytesWritten - before;
      stats.snapshotsSent += 1;
      this.#logger.info('snapshot sent', { peer: hex(to), index: message.snapshot?.meta.index, bytes });
      this.#repeatedWarnings.clear(`send ${to}`);
      report(true);
    } catch (err) {
      stats.snapshotFailures += 1;
      this.#repeatedWarnings.warn(`send ${to}`, 'snapshot send failed', { peer: hex(to), error: (err as Error).message });
      report(false);
      throw err;
    } finally {
      conn?.destroy();
    }
  }

  /** A one-shot RPC to any member by its peer URL (members and would-be members alike). */
  request(url: string, req: PeerRequest, options: { timeoutMs?: number; to?: NodeId } = {}): Promise<PeerResponse> {
    return this.#track(this.#exchange(url, req, options));
  }

  /**
   * The round trip of one probe request to a member, in ms: from sending the request on a connection
   * already dialled and authenticated to its answer (etcd_network_peer_round_trip_time_seconds).
   */
  async probe(url: string, to: NodeId, timeoutMs: number): Promise<number> {
    const kept = this.#probeConns.get(url);
    if (kept !== undefined && !kept.closed) {
      try {
        return await this.#probeOn(kept, timeoutMs);
      } catch {
        // Closed under us (the peer restarted, or answers one request per connection): a fresh one below.
        kept.destroy();
      }
    }
    const conn = await this.#dial(url, timeoutMs);
    try {
      await offerHandshake(conn, this.#identity, 'request', to, timeoutMs);
      const ms = await this.#probeOn(conn, timeoutMs);
      if (this.#closed) conn.destroy();
      else {
        // Kept for the next probe (peerProbeConnectionIdleMs), as etcd's prober reuses its connection.
        this.#probeConns.set(url, conn);
        conn.onClose(() => {
          if (this.#probeConns.get(url) === conn) this.#probeConns.delete(url);
        });
      }
      return ms;
    } catch (error) {
      conn.destroy();
      throw error;
    }
  }

  async #probeOn(conn: FramedConnection, timeoutMs: number): Promise<number> {
    const sentAt = performance.now();
    conn.send(FrameType.Request, { method: probeMethod });
    const frame = await conn.nextFrame(timeoutMs, 'response to probe');
    if (frame.type !== FrameType.Response) throw new Error(`expected a response frame, got type ${frame.type}`);
    return performance.now() - sentAt;
  }

  async #exchange(url: string, req: PeerRequest, options: { timeoutMs?: number; to?: NodeId }): Promise<PeerResponse> {
    const timeoutMs = options.timeoutMs ?? this.#limits.requestTimeoutMs;
    const conn = await this.#dial(url, timeoutMs);
    try {
      await offerHandshake(conn, this.#identity, 'request', options.to ?? 0n, timeoutMs);
      conn.send(FrameType.Request, req);
      const frame = await conn.nextFrame(timeoutMs, `response to ${req.method}`);
      if (frame.type !== FrameType.Response) throw new Error(`expected a response frame, got type ${frame.type}`);
      return decodePayload(frame) as PeerResponse;
    } finally {
      conn.destroy();
    }
  }

  /** Dials a connection of our own, tracked until it closes; refused once the transport is closed. */
  async #dial(url: string, timeoutMs: number): Promise<FramedConnection> {
    if (this.#closed) throw new Error('peer transport closed');
    const conn = await dial(url, this.#tls, timeoutMs);
    if (this.#closed) {
      conn.destroy();
      throw new Error('peer transport closed');
    }
    this.#outbound.add(conn);
    conn.onClose(() => this.#outbound.delete(conn));
    return conn;
  }

  /** Keeps a call's promise until it settles, so close() can wait for it (its outcome is the caller's). */
  #track<T>(call: Promise<T>): Promise<T> {
    this.#outboundCalls.add(call);
    const forget = (): void => void this.#outboundCalls.delete(call);
    call.then(forget, forget);
    return call;
  }

  /** A copy of the counters per peer (also for peers that only sent to us). */
  stats(): Map<NodeId, PeerStats> {
    return new Map([...this.#stats].map(([id, s]) => [id, { ...s }]));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const stream of this.#peers.values()) stream.close();
    this.#peers.clear();
    for (const conn of this.#inbound) conn.destroy();
    this.#inbound.clear();
    for (const conn of this.#probeConns.values()) conn.destroy();
    this.#probeConns.clear();
    for (const socket of this.#held) socket.destroy();
    this.#held = [];
    // A snapshot being sent reads the store: it must have stopped before the stop closes the store.
    for (const conn of this.#outbound) conn.destroy(new Error('peer transport closed'));
    this.#outbound.clear();
    await Promise.allSettled([...this.#outboundCalls]);
    const servers = [...(this.#server !== undefined ? [this.#server] : []), ...this.#extraServers];
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }

  #statsFor(id: NodeId): PeerStats {
    let stats = this.#stats.get(id);
    if (stats === undefined) {
      stats = emptyPeerStats();
      this.#stats.set(id, stats);
    }
    return stats;
  }

  #sendTo(to: NodeId, msgs: Message[]): void {
    const stream = this.#peers.get(to);
    if (stream !== undefined) {
      stream.push(msgs);
      return;
    }
    this.#statsFor(to).sendFailures += msgs.length;
    this.#logger.debug('dropped messages to an unknown peer', { peer: hex(to), count: msgs.length });
    this.#o.onUnreachable?.(to);
  }

  #peerUrl(id: NodeId): string {
    const stream = this.#peers.get(id);
    const url = stream?.urls[0];
    if (url === undefined) throw new Error(`unknown peer ${hex(id)}`);
    return url;
  }

  #accept(socket: net.Socket): void {
    if (this.#closed) return void socket.destroy();
    if (this.#inbound.size + this.#held.length >= this.#limits.inboundConnectionsMax) {
      // Unauthenticated connections cost memory until their handshake times out; cap them.
      this.#logger.warn('too many inbound peer connections; closing a new one', { remote: socket.remoteAddress, max: this.#limits.inboundConnectionsMax });
      return void socket.destroy();
    }
    const inbound = this.#serving;
    if (inbound === undefined) {
      this.#held.push(socket);
      // A peer that gives up while waiting leaves no socket behind; a reset ends that socket, not the process.
      socket.on('error', () => socket.destroy());
      socket.once('close', () => (this.#held = this.#held.filter((s) => s !== socket)));
      return;
    }
    const conn = new FramedConnection(socket);
    this.#inbound.add(conn);
    conn.onClose(() => this.#inbound.delete(conn));
    void this.#serve(conn, inbound);
  }

  async #serve(conn: FramedConnection, inbound: PeerInbound): Promise<void> {
    let peer;
    try {
      peer = await acceptHandshake(conn, this.#identity, this.#limits.handshakeTimeoutMs, inbound.authorizePeer);
    } catch (err) {
      this.#logger.warn('peer connection refused', { remote: conn.remoteAddress, error: (err as Error).message });
      if (!(err instanceof Error && err.name === 'PeerAuthError')) conn.destroy();
      return;
    }
    const { kind, from } = peer;
    if (kind === 'raft') return this.#serveRaft(conn, from, inbound);
    if (kind === 'snapshot') return this.#serveSnapshot(conn, from, inbound);
    return serveRequest(conn, from, inbound.onRequest, this.#limits.requestTimeoutMs, this.#logger);
  }

  #serveRaft(conn: FramedConnection, from: NodeId, inbound: PeerInbound): void {
    this.#peers.get(from)?.redialNow();
    const stats = this.#statsFor(from);
    let lastBytes = conn.bytesRead;
    conn.setHandler((frame) => {
      stats.bytesReceived += conn.bytesRead - lastBytes;
      lastBytes = conn.bytesRead;
      const msgs = frame.type === FrameType.Messages ? validateMessages(decodeOrUndefined(frame), from, this.#o.selfId) : undefined;
      if (msgs === undefined) {
        this.#logger.warn('malformed raft frame; closing the stream', { peer: hex(from), type: frame.type });
        return conn.destroy();
      }
      stats.framesReceived += 1;
      stats.messagesReceived += msgs.length;
      inbound.onMessages(msgs);
    });
  }

  async #serveSnapshot(conn: FramedConnection, from: NodeId, inbound: PeerInbound): Promise<void> {
    const stats = this.#statsFor(from);
    let message: Message;
    try {
      message = await receiveSnapshot(conn, from, this.#limits.snapshotAckTimeoutMs, inbound.snapshotSink);
    } catch (err) {
      this.#repeatedWarnings.warn(`receive ${from}`, 'snapshot receive failed', { peer: hex(from), error: (err as Error).message });
      return;
    }
    this.#repeatedWarnings.clear(`receive ${from}`);
    stats.bytesReceived += conn.bytesRead;
    stats.snapshotsReceived += 1;
    const snapshot = message.snapshot;
    assert(snapshot !== undefined, 'received snapshot lost its data');
    try {
      if (inbound.onSnapshot !== undefined) await inbound.onSnapshot(from, snapshot, message);
      else inbound.onMessages([message]);
      conn.send(FrameType.SnapAck, { ok: true });
    } catch (err) {
      this.#logger.error('applying a received snapshot failed', { peer: hex(from), error: err as Error });
      conn.send(FrameType.SnapAck, { ok: false, error: (err as Error).message });
    }
    conn.socket.end();
  }
}
