/**
 * The member's side of the peer transport: which peers it dials (kept in step with the member list) and
 * request RPCs with etcd's errors carried by code (the snapshot bridge is snapshot-bridge.ts).
 */
import { buildVersion } from '../config/build-info.js';
import { dataFormatVersion } from '../base/version.js';
import { MvccError } from '../mvcc/types.js';
import type { PeerCall, PeerMethod, PeerPayload, PeerResults } from '../node/peer-rpc.js';
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
