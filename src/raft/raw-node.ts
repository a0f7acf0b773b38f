/**
 * RawNode: the one public API of the Raft core. Pure, synchronous, deterministic: it does no I/O, reads no
 * clock and draws randomness only from config.rng. The driver (server or simulator) turns time into tick()s,
 * delivers messages with step(), and carries out what ready() hands it (see Ready in types.ts).
 *
 * CONTRACT STUB: the signatures below are fixed; the implementation is being written.
 */
import type {
  ConfChange,
  ConfState,
  Message,
  PersistAck,
  ProposeResult,
  RaftBootstrap,
  RaftConfig,
  Ready,
  Status,
  Snapshot,
} from './types.js';

export class RawNode {
  constructor(config: RaftConfig, bootstrap: RaftBootstrap) {
    void config;
    void bootstrap;
    throw new Error('not implemented');
  }

  /** One logical clock tick (the driver calls it every heartbeat-interval / heartbeatTicks ms). */
  tick(): void {}

  /** Deliver a message from a peer. Messages from unknown or removed nodes, and stale terms, are handled as Raft says. */
  step(m: Message): void {
    void m;
  }

  /** Propose application data. On a follower the proposal is forwarded to the known leader (MsgProp). */
  propose(data: Uint8Array): ProposeResult {
    void data;
    return { ok: false, error: 'noLeader' };
  }

  /** Propose a membership change. Leader only. */
  proposeConfChange(cc: ConfChange): ProposeResult {
    void cc;
    return { ok: false, error: 'notLeader' };
  }

  /**
   * Request a linearizable read point. The answer comes as a ReadState in a later Ready, after the leader
   * has confirmed its leadership with a heartbeat quorum and has committed an entry in its term. A follower
   * forwards to the leader. Requests that cannot be answered (no leader, lost leadership) are dropped; the
   * server times them out.
   */
  readIndex(context: Uint8Array): void {
    void context;
  }

  /** Ask the leader to hand leadership to `transferee` (forwarded when called on a follower). */
  transferLeader(transferee: bigint): void {
    void transferee;
  }

  hasReady(): boolean {
    return false;
  }

  ready(): Ready {
    throw new Error('not implemented');
  }

  /** The driver made a Ready's hard state, snapshot and entries durable. */
  onPersisted(ack: PersistAck): void {
    void ack;
  }

  /** The application applied everything up to and including `index`. */
  onApplied(index: number): void {
    void index;
  }

  /** Apply a committed conf-change entry's change to the configuration; returns the new configuration. */
  applyConfChange(cc: ConfChange): ConfState {
    void cc;
    throw new Error('not implemented');
  }

  /**
   * The application took a snapshot of its state at `index` (≤ applied). The core keeps it for followers
   * that fall behind and releases log entries up to `index - keepEntries`.
   */
  compact(snapshot: Snapshot, keepEntries: number): void {
    void snapshot;
    void keepEntries;
  }

  /** The transport could not reach `id`: the leader moves it to probe state. */
  reportUnreachable(id: bigint): void {
    void id;
  }

  /** The transport finished (or failed) sending a snapshot to `id`. */
  reportSnapshot(id: bigint, ok: boolean): void {
    void id;
    void ok;
  }

  status(): Status {
    throw new Error('not implemented');
  }
}
