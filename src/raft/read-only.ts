/**
 * The leader's queue of ReadIndex requests (etcd-io/raft read_only.go, "safe" mode: no clock leases).
 * A request records the commit index when it arrived; it is answered once a quorum acknowledged a heartbeat
 * sent after it, which proves no newer leader existed at that moment. An ack for a later request also
 * confirms every earlier one, so answering is a prefix pop.
 *
 * Heartbeats carry a round number the leader assigns (8 bytes), not the client's context: a client that
 * reuses a context (etcd #20418: a retried ReadIndex) can then never be confirmed by a delayed ack of an
 * earlier heartbeat, which would have been sent before the new request existed.
 */
import { assert } from '../base/assert.js';
import type { NodeId } from './types.js';

export interface ReadRequest {
  /** The heartbeat round that confirms this request (monotonic for the life of the node). */
  round: number;
  index: number;
  /** Who asked: the leader itself, or a follower that forwarded MsgReadIndex. */
  from: NodeId;
  context: Uint8Array;
  acks: Set<NodeId>;
}

export class ReadOnlyQueue {
  #round = 0;
  #byRound = new Map<number, ReadRequest>();
  /** Pending client contexts (a duplicate of a pending request is dropped, as etcd does). */
  #pendingKeys = new Set<string>();
  #queue: ReadRequest[] = [];
  #head = 0;
  readonly #pendingMax: number;

  constructor(pendingMax: number) {
    this.#pendingMax = pendingMax;
  }

  get size(): number {
    return this.#queue.length - this.#head;
  }

  /** Queue a request; undefined when it duplicates a pending context or the queue is full (dropped). */
  add(index: number, from: NodeId, context: Uint8Array): ReadRequest | undefined {
    const key = contextKey(context);
    if (this.#pendingKeys.has(key) || this.size >= this.#pendingMax) return undefined;
    const rs: ReadRequest = { round: ++this.#round, index, from, context, acks: new Set() };
    this.#pendingKeys.add(key);
    this.#byRound.set(rs.round, rs);
    this.#queue.push(rs);
    return rs;
  }

  /** Record that `from` acknowledged heartbeat round `round`; returns its acks, or undefined if unknown. */
  recvAck(from: NodeId, round: number): ReadonlySet<NodeId> | undefined {
    const rs = this.#byRound.get(round);
    if (rs === undefined) return undefined;
    rs.acks.add(from);
    return rs.acks;
  }

  /** Pop every request up to and including round `round` (they are all confirmed by the same quorum). */
  advance(round: number): ReadRequest[] {
    if (!this.#byRound.has(round)) return [];
    const out: ReadRequest[] = [];
    while (this.#head < this.#queue.length) {
      const rs = this.#queue[this.#head]!;
      if (rs.round > round) break;
      this.#head++;
      assert(this.#byRound.delete(rs.round), 'read-only queue out of sync');
      this.#pendingKeys.delete(contextKey(rs.context));
      out.push(rs);
    }
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    }
    return out;
  }

  /** The newest pending round, carried on periodic heartbeats so a lost round is retried. */
  lastPendingRound(): number | undefined {
    return this.size === 0 ? undefined : this.#queue[this.#queue.length - 1]!.round;
  }

  clear(): void {
    this.#byRound.clear();
    this.#pendingKeys.clear();
    this.#queue = [];
    this.#head = 0;
  }
}

/** Contexts are short opaque byte strings; a latin1 string is a cheap exact set key. */
export function contextKey(context: Uint8Array): string {
  let s = '';
  for (let i = 0; i < context.length; i++) s += String.fromCharCode(context[i]!);
  return s;
}

/** A heartbeat round as a heartbeat context (8 bytes, big-endian float64 of a safe integer). */
export function roundContext(round: number): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setFloat64(0, round);
  return out;
}

/** The round a heartbeat response carries, or undefined for a context that is not one. */
export function roundOf(context: Uint8Array | undefined): number | undefined {
  if (context === undefined || context.byteLength !== 8) return undefined;
  const n = new DataView(context.buffer, context.byteOffset, 8).getFloat64(0);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}
