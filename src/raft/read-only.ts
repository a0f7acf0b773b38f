/**
 * The leader's queue of ReadIndex requests (etcd-io/raft read_only.go, "safe" mode: no clock leases).
 * A request records the commit index when it arrived; it is answered once a quorum acknowledged a heartbeat
 * carrying its context, which proves no newer leader existed at that moment. An ack for a later request also
 * confirms every earlier one (heartbeats are answered in order of our term), so answering is a prefix pop.
 */
import { assert } from '../base/assert.js';
import type { NodeId } from './types.js';

export interface ReadRequest {
  index: number;
  /** Who asked: the leader itself, or a follower that forwarded MsgReadIndex. */
  from: NodeId;
  context: Uint8Array;
  acks: Set<NodeId>;
}

export class ReadOnlyQueue {
  #byKey = new Map<string, ReadRequest>();
  #queue: string[] = [];
  #head = 0;
  readonly #pendingMax: number;

  constructor(pendingMax: number) {
    this.#pendingMax = pendingMax;
  }

  get size(): number {
    return this.#queue.length - this.#head;
  }

  /** Queue a request; false when it is a duplicate context or the queue is full (the caller drops it). */
  add(index: number, from: NodeId, context: Uint8Array): boolean {
    const key = contextKey(context);
    if (this.#byKey.has(key) || this.size >= this.#pendingMax) return false;
    this.#byKey.set(key, { index, from, context, acks: new Set() });
    this.#queue.push(key);
    return true;
  }

  /** Record that `from` acknowledged the heartbeat for `context`; returns the ack count, or 0 if unknown. */
  recvAck(from: NodeId, context: Uint8Array): number {
    const rs = this.#byKey.get(contextKey(context));
    if (rs === undefined) return 0;
    rs.acks.add(from);
    return rs.acks.size;
  }

  acks(context: Uint8Array): ReadonlySet<NodeId> | undefined {
    return this.#byKey.get(contextKey(context))?.acks;
  }

  /** Pop every request up to and including `context` (they are all confirmed by the same quorum). */
  advance(context: Uint8Array): ReadRequest[] {
    const key = contextKey(context);
    if (!this.#byKey.has(key)) return [];
    const out: ReadRequest[] = [];
    while (this.#head < this.#queue.length) {
      const k = this.#queue[this.#head++]!;
      const rs = this.#byKey.get(k);
      assert(rs !== undefined, 'read-only queue out of sync');
      this.#byKey.delete(k);
      out.push(rs);
      if (k === key) break;
    }
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    }
    return out;
  }

  /** The newest pending context, carried on periodic heartbeats so a lost round is retried. */
  lastPendingContext(): Uint8Array | undefined {
    if (this.size === 0) return undefined;
    return this.#byKey.get(this.#queue[this.#queue.length - 1]!)?.context;
  }

  clear(): void {
    this.#byKey.clear();
    this.#queue = [];
    this.#head = 0;
  }
}

/** Contexts are short opaque byte strings; a latin1 string is a cheap exact map key. */
export function contextKey(context: Uint8Array): string {
  let s = '';
  for (let i = 0; i < context.length; i++) s += String.fromCharCode(context[i]!);
  return s;
}
