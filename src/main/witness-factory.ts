/**
 * The one way a witness member is built (issue 33), beside member-factory.ts's data member: from ports (time
 * and timers, its log, its network) and its options, the Raft driver over a log that only keeps a tail (the
 * leader's word moves its start: Ready.releaseLog), the application that applies membership changes only, and
 * where its peers are (WitnessPeers). witness.ts calls it with the real scheduler, the WAL and the peer
 * transport; the production-node simulator (test/sim/node/witness-node.ts) with its seeded loop, simulated
 * disk and in-memory network, so the simulator's witness seeds run this wiring.
 */
import { hex } from '../base/hex.js';
import type { Scheduler, TimerHandle } from '../base/scheduler.js';
import { witnessMembersRefreshMs } from '../base/limits.js';
import { decodeConfChange } from '../raft/conf.js';
import type { RawNode } from '../raft/raw-node.js';
import { EntryType, type Entry, type Snapshot } from '../raft/types.js';
import type { Logger } from '../config/log.js';
import type { PeerCall } from '../node/peer-rpc.js';
import { RaftDriver, type DriverLog, type DriverTransport } from '../node/driver/raft-driver.js';
import { decodeConfChangeContext } from '../node/driver/raft-request.js';

/** A witness's log: the driver's, plus moving its start (a snapshot record without data, then the segments behind it). */
export interface WitnessLog extends DriverLog {
  saveSnapshot(snapshot: Snapshot): Promise<void>;
  releaseTo(index: number): Promise<void>;
}

/** A witness's peer network: Raft messages, the member list asked of a data member, who its peers are. */
export interface WitnessNetwork extends DriverTransport {
  request: PeerCall;
  /** Keep the peers equal to the member list (this witness excluded). */
  syncPeers(members: Array<{ id: bigint; peerUrls: string[] }>): void;
}

export interface WitnessMemberPorts<N extends WitnessNetwork> {
  /** Time and timers: the real ones, or the simulator's seeded loop. */
  scheduler: Scheduler;
  wal: WitnessLog;
  /** Opened once the driver it reports to exists. */
  network(driver: RaftDriver): N | Promise<N>;
}

export interface WitnessMemberOptions {
  /** The Raft core, from what the log recovered. */
  raft: RawNode;
  memberId: bigint;
  /** The members it joined with (identity.joinPeers): where it first asks for the member list. */
  joinPeers: ReadonlyArray<{ id: bigint; peerUrls: string[] }>;
  heartbeatMs: number;
  logger: Logger;
  /** A conf change it applied removed this witness. */
  onRemoved(): void;
  onFatal(error: unknown): void;
}

export interface WitnessMember<N extends WitnessNetwork> {
  readonly driver: RaftDriver;
  readonly network: N;
  /** Start the driver, tell the network its peers and ask for the member list, now and every witnessMembersRefreshMs. */
  start(): void;
  /** Stop the member list refresh (the driver and network are stopped by their owner). */
  stopRefresh(): void;
}

export async function buildWitnessMember<N extends WitnessNetwork>(ports: WitnessMemberPorts<N>, o: WitnessMemberOptions): Promise<WitnessMember<N>> {
  const { scheduler, wal } = ports;
  const log = o.logger;
  const driver = new RaftDriver(o.raft, {
    save: (u) => wal.save({ hardState: u.hardState, entries: u.entries, sync: u.sync }),
    saveSnapshot: (s) => wal.saveSnapshot(s),
    // The log's new start: a snapshot record without data (a witness has no state), then the segments behind it.
    releaseLog: (meta) => wal.saveSnapshot({ meta, data: new Uint8Array(0) }).then(() => wal.releaseTo(meta.index)),
  }, { tickIntervalMs: o.heartbeatMs, scheduler });
  const network = await ports.network(driver);
  const peers = new WitnessPeers(network, o.memberId, o.joinPeers, log);
  let refresh: TimerHandle | undefined;
  return {
    driver,
    network,
    start: () => {
      driver.start({
        // No store to fall behind: the witness only reads membership changes from what it "applies".
        applyHold: () => undefined,
        applyEntries: (entries) => {
          if (peers.apply(driver, entries)) o.onRemoved();
        },
        // Snapshot metadata from a data leader: the log restarts after it; peers added before it are asked for.
        restoreSnapshot: async () => void peers.refresh(),
        onSoftState: (state) =>
          state.leader === 0n ? log.warn('no leader', { role: state.role }) : log.info('leader changed', { leader: hex(state.leader), role: state.role }),
        onReadStates: () => {},
        onStable: () => {},
        onFatal: (error) => o.onFatal(error),
      }, network);
      peers.start();
      void peers.refresh();
      refresh = scheduler.every(witnessMembersRefreshMs, () => void peers.refresh(), { background: true });
    },
    stopRefresh: () => refresh?.cancel(),
  };
}

/**
 * Where the witness's peers are: the members it joined with, every member a conf change it applies names, and
 * the member list a data member gives it (peer URL updates are normal entries, which a witness skips).
 */
class WitnessPeers {
  readonly #network: WitnessNetwork;
  readonly #self: bigint;
  readonly #log: Logger;
  readonly #members = new Map<bigint, string[]>();

  constructor(network: WitnessNetwork, self: bigint, joinPeers: WitnessMemberOptions['joinPeers'], log: Logger) {
    this.#network = network;
    this.#self = self;
    this.#log = log;
    for (const p of joinPeers) this.#members.set(p.id, p.peerUrls);
  }

  start(): void {
    this.#push();
  }

  /** Conf changes only (a witness applies nothing else); returns true when one removed this witness. */
  apply(driver: RaftDriver, entries: Entry[]): boolean {
    let removedSelf = false;
    for (const e of entries) {
      if (e.type !== EntryType.ConfChange) continue;
      const cc = decodeConfChange(e.data);
      driver.applyConfChange(cc);
      if (cc.type === 'removeNode') {
        this.#members.delete(cc.nodeId);
        if (cc.nodeId === this.#self) removedSelf = true;
      } else if (cc.context.byteLength > 0) {
        const { member } = decodeConfChangeContext(cc.context);
        if (member.peerUrls.length > 0) this.#members.set(cc.nodeId, member.peerUrls);
      }
    }
    this.#push();
    return removedSelf;
  }

  /** Ask the data members we know for the member list; the first answer wins. */
  async refresh(): Promise<void> {
    for (const [id, urls] of [...this.#members]) {
      if (id === this.#self || urls[0] === undefined) continue;
      try {
        const { members } = await this.#network.request(urls[0], 'members', {});
        this.#members.clear();
        for (const m of members) this.#members.set(m.id, m.peerUrls);
        this.#push();
        return;
      } catch (error) {
        this.#log.debug('witness: member list request failed', { peer: hex(id), error: (error as Error).message });
      }
    }
  }

  #push(): void {
    this.#network.syncPeers([...this.#members].map(([id, peerUrls]) => ({ id, peerUrls })));
  }
}
