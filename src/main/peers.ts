/**
 * The member's side of the peer transport: which peers it dials (kept in step with the member list),
 * request RPCs with etcd's errors carried by code, telling a removed member it is out, and streaming
 * snapshots to followers from the backend.
 */
import { buildVersion } from '../config/build-info.js';
import { dataFormatVersion } from '../base/version.js';
import { hex } from '../base/hex.js';
import { MvccError } from '../mvcc/types.js';
import { MessageType, type Message } from '../raft/types.js';
import type { Member } from '../node/server-api.js';
import type { PeerCall, PeerMethod, PeerPayload, PeerResults } from '../node/peer-rpc.js';
import type { EtcdServer } from '../node/etcd-server.js';
import { EtcdError, fromMvccError, peerRefusal } from '../node/errors.js';
import type { MemberOptions } from '../config/member-options.js';
import type { PeerTransport } from '../peer/transport.js';
import type { PeerTransportOptions } from '../peer/types.js';
import type { Identity } from '../storage/identity.js';
import type { RaftDriver } from '../node/driver/raft-driver.js';
import { peerTlsOf } from './member-etcd-options.js';

/** The transport options a data member and a witness share: who it is, where it listens, Raft's inbox. */
export function transportBase(o: MemberOptions, identity: Identity, token: string, driver: RaftDriver): PeerTransportOptions {
  return {
    selfId: identity.memberId,
    clusterId: identity.clusterId,
    token,
    listenUrl: o.listenPeerUrls[0]!,
    alsoListenUrls: o.listenPeerUrls.slice(1),
    tls: peerTlsOf(o),
    logger: o.logger.child({ component: 'transport' }),
    onUnreachable: (id) => driver.reportUnreachable(id),
    onSnapshotStatus: (id, ok) => driver.reportSnapshot(id, ok),
    version: { build: buildVersion(), dataFormat: dataFormatVersion },
  };
}

/** `url` with `port` when it names none or port 0 (a listener's real port). */
export function withPort(url: string, port: number): string {
  const u = new URL(url.includes('://') ? url : `http://${url}`);
  if (u.port === '0' || u.port === '') u.port = String(port);
  return `${u.protocol}//${u.host}`;
}

/** Keeps the transport's peers equal to the member list (this member excluded). */
export class PeerSync {
  readonly #transport: PeerTransport;
  readonly #self: bigint;
  #known = new Set<bigint>();

  constructor(transport: PeerTransport, self: bigint) {
    this.#transport = transport;
    this.#self = self;
  }

  sync(members: Array<{ id: bigint; peerUrls: string[] }>): void {
    const transport = this.#transport;
    const wanted = new Set<bigint>();
    for (const m of members) {
      if (m.id === this.#self || m.peerUrls.length === 0) continue;
      wanted.add(m.id);
      if (transport.hasPeer(m.id)) transport.updatePeer(m.id, m.peerUrls);
      else transport.addPeer(m.id, m.peerUrls);
    }
    for (const id of this.#known) if (!wanted.has(id)) transport.removePeer(id);
    this.#known = wanted;
  }
}

/** An error answered to a peer or a joiner: etcd's message and code when it is one of etcd's errors. */
export function describePeerError(error: unknown): { error: string; code?: string } {
  if (error instanceof MvccError) error = fromMvccError(error);
  if (error instanceof EtcdError) return { error: error.message, code: error.code };
  return { error: error instanceof Error ? error.message : String(error) };
}

/** A peer request RPC that rethrows the peer's etcd error as this member's (same code, same message). */
export function peerRequestOf(transport: PeerTransport): PeerCall {
  return async <M extends PeerMethod>(url: string, method: M, payload: PeerPayload<M>): Promise<PeerResults[M]> => {
    const r = await transport.request(url, { method, payload });
    // The peer answers each method with its PeerResults type (node/peer-rpc.ts).
    if (r.ok) return r.payload as PeerResults[M];
    throw peerRefusal(r);
  };
}

/** Tell a removed member it is out, a few times over a few seconds; it may be briefly unreachable. */
export async function notifyRemoved(transport: PeerTransport, member: Member, log: MemberOptions['logger']): Promise<void> {
  const url = member.peerUrls[0];
  if (url === undefined) return;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const r = await transport.request(url, { method: 'removed', payload: { id: member.id } }, { timeoutMs: 2000 });
      if (r.ok) return;
    } catch {
      // unreachable: try again shortly
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  log.info('could not tell a removed member it was removed', { member: hex(member.id) });
}

/**
 * The Raft core keeps only its latest snapshot's metadata (a member's own snapshots are markers; the backend
 * is the data). When a MsgSnap leaves, the backend is streamed to the follower from a consistent view, with
 * metadata for the index that view holds (etcd's merged snapshot message), so no copy of the key space is
 * ever held in memory. A witness gets the metadata alone, as an ordinary message.
 */
export function snapshotStreamingTransport(transport: PeerTransport, server: EtcdServer, log: MemberOptions['logger']): { send(msgs: Message[]): void } {
  const stream = async (m: Message): Promise<void> => {
    let exported: Awaited<ReturnType<EtcdServer['snapshotForFollower']>>;
    try {
      exported = await server.snapshotForFollower();
    } catch (error) {
      log.warn('cannot export a snapshot for a follower yet', { peer: hex(m.to), error: (error as Error).message });
      return server.driver.reportSnapshot(m.to, false);
    }
    try {
      await transport.sendSnapshot({ ...m, snapshot: { meta: exported.meta, data: new Uint8Array(0) } }, exported.chunks);
    } catch {
      // reported to Raft through onSnapshotStatus
    } finally {
      await exported.close();
    }
  };
  return {
    send(msgs: Message[]): void {
      const ready: Message[] = [];
      for (const m of msgs) {
        // A witness holds no state: it gets the snapshot's metadata alone (a new start for its log), the
        // transport's stream of the message's empty data.
        const streamed = m.type === MessageType.Snap && m.snapshot !== undefined && m.snapshot.data.length === 0 && !server.isWitness(m.to);
        if (streamed) void stream(m);
        else ready.push(m);
      }
      if (ready.length > 0) transport.send(ready);
    },
  };
}
