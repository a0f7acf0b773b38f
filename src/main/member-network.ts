/**
 * The production network port of a data member (member-factory.ts): the peer transport (src/peer), its port
 * bound, as the factory's MemberNetwork. Served once the server that answers it exists (member.ts).
 */
import type { Logger } from '../config/log.js';
import type { MemberOptions } from '../config/member-options.js';
import type { Identity } from '../storage/identity.js';
import type { RaftDriver } from '../node/driver/raft-driver.js';
import { PeerTransport } from '../peer/transport.js';
import type { MemberNetwork } from './member-factory.js';
import { PeerSync, peerRequestOf, transportBase, withPort } from './peers.js';

/** How long one attempt to tell a removed member it is out may take. */
const tellRemovedTimeoutMs = 2000;

export interface PeerNetwork extends MemberNetwork {
  readonly transport: PeerTransport;
}

/**
 * Build the transport and bind its port (the member is built with its URL). `onRemovedByPeer`: a peer refused
 * this member because the cluster removed it while it was away.
 */
export async function openPeerNetwork(o: MemberOptions, identity: Identity, token: string, driver: RaftDriver, onRemovedByPeer: (reason: string) => void): Promise<PeerNetwork> {
  const log: Logger = o.logger;
  const transport = new PeerTransport({
    ...transportBase(o, identity, token, driver),
    onPeerRefused: (_id, refusal) => {
      if (refusal.code === 'removed') {
        log.warn('a peer refused this member: it was removed from the cluster; stopping', { reason: refusal.reason });
        onRemovedByPeer(refusal.reason);
      }
    },
  });
  const { port } = await transport.listen();
  const peers = new PeerSync(transport, identity.memberId);
  return {
    transport,
    peerUrls: [withPort(o.initialAdvertisePeerUrls[0] ?? o.listenPeerUrls[0]!, port)],
    send: (messages) => transport.send(messages),
    sendSnapshot: (message, chunks) => transport.sendSnapshot(message, chunks),
    request: peerRequestOf(transport),
    // Before the first member list is applied, the peers this member was told to join.
    syncPeers: (members) => peers.sync(members.length > 0 ? members : identity.joinPeers),
    tellRemoved: async (url, id) => (await transport.request(url, { method: 'removed', payload: { id } }, { timeoutMs: tellRemovedTimeoutMs })).ok,
    peerVersions: () => transport.peerVersions,
  };
}
