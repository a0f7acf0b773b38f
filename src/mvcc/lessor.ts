/**
 * Leases (etcd's lease/lessor.go), split along the line Raft draws:
 *
 * Apply path (replicated, deterministic, no time): `grant`, `revoke`, `checkpoint`, and the LeaseHooks the KV
 * store calls. These change the lease table and persist it in the 'lease' bucket through the store's write
 * buffer, atomically with the entry that caused them.
 *
 * Leader side (local, time as an explicit `nowMs`, monotonic ms from the driver loop): `promote`, `demote`,
 * `renew`, `expired`, `checkpointsDue`, `timeToLive`. Only the primary (leader) tracks expiries; a follower
 * keeps every lease alive forever. Expiry never revokes anything by itself: `expired()` hands ids to the
 * server, which proposes a LeaseRevoke through Raft; the lease dies when that entry is applied everywhere.
 *
 * What the server must guarantee (etcd #9888, Jepsen): call `promote(nowMs, {extendMs: electionTimeoutMs})`
 * only once this node is leader AND has committed an entry of its term (so it has applied every earlier
 * revoke/checkpoint); call `demote()` as soon as it stops being leader, or when check-quorum fails (a paused
 * or partitioned old leader must not propose revokes: the proposals also fail for a deposed leader, but
 * `demote` stops offering them). Pass a monotonic clock; after a pause longer than the election timeout,
 * verify leadership (ReadIndex) before proposing the revokes `expired()` returns, or they may come from a node
 * that lost leadership while frozen (R21 and C9 in test/GLOSSARY.md). Propose `checkpointsDue()` results as one
 * LeaseCheckpoint entry, so remaining TTLs survive a leader change (a new leader neither resets nor extends).
 */
import { assert } from '../base/assert.js';
import { leaseTtlSecondsMax } from '../base/limits.js';
import type { Backend, WriteBuffer } from './backend.js';
import { decodeLeaseRecord, encodeLeaseRecord, leaseIdOfKey, leaseKey } from './lease-codec.js';
import { keyText, keyTextBytes } from './key-text.js';
import { LeaseHeap } from './lease-heap.js';
import type { LeaseHooks } from './lease-hooks.js';
import { MvccError, type TxnRequest, type TxnResponse } from './types.js';

/** etcd: defaultLeaseCheckpointInterval. */
export const leaseCheckpointIntervalMs = 5 * 60 * 1000;
/** etcd: defaultExpiredleaseRetryInterval; an offered expired lease is offered again after this. */
export const leaseExpiredRetryIntervalMs = 3000;
/** etcd: defaultLeaseRevokeRate; promote spreads expiries so no second holds more than 3/4 of it. */
export const leaseRevokeRatePerSecond = 1000;

/** The part of the KV store the lessor writes through. */
export interface LessorStore {
  txn(req: TxnRequest): TxnResponse;
  readonly buffer: WriteBuffer;
}

export interface LessorOptions {
  /**
   * Grants below it are raised to it (etcd: ceil(1.5 × election timeout) seconds, computed by the server from
   * its config; default 1).
   */
  minTtlSeconds?: number;
  checkpointIntervalMs?: number;
  expiredRetryIntervalMs?: number;
  revokeRatePerSecond?: number;
}

export interface LeaseCheckpoint {
  id: bigint;
  /** 0 clears a checkpoint (sent after a keepalive, as etcd's Renew does). */
  remainingTtlSeconds: number;
}

export interface LeaseTimeToLive {
  id: bigint;
  /** Seconds left (truncated, as etcd); on a non-leader, the checkpointed remaining TTL or the full TTL. */
  ttlSeconds: number;
  grantedTtlSeconds: number;
  keys: Uint8Array[];
}

/** Leader-only methods called on a follower (etcd's ErrNotPrimary): the server forwards or retries. */
export class NotPrimaryError extends Error {
  override name = 'NotPrimaryError';
  constructor() {
    super('not a primary lessor');
  }
}

interface Lease {
  readonly id: bigint;
  readonly ttlSeconds: number;
  /** Last checkpointed remaining TTL; 0 = unset. Replicated. */
  remainingTtlSeconds: number;
  /**
   * Attached keys as latin1 text (key-text.ts), in no order; string order is byte order (sorted at revoke).
   * Text, not bytes: a Uint8Array per leased key would cost ≈ 260 bytes of heap against 32 (bench/heap-per-key.ts).
   */
  readonly keys: Set<string>;
  /** Leader-local. Infinity: never (follower, or not yet settled after a grant). */
  expiryMs: number;
  /** The atMs of this lease's one valid entry in the expiry heap (lazy invalidation). */
  heapAtMs: number;
  checkpointAtMs: number;
}

export class Lessor implements LeaseHooks {
  #leases = new Map<bigint, Lease>();
  #store: LessorStore | undefined;
  #primary = false;
  #extendMs = 0;
  #minTtlSeconds: number;
  #checkpointIntervalMs: number;
  #retryIntervalMs: number;
  #revokeRatePerSecond: number;
  #expiries = new LeaseHeap();
  #checkpoints = new LeaseHeap();
  /** Granted while primary, waiting for the next `nowMs` to start their clock (apply has no time). */
  #unsettled = new Set<bigint>();
  /** Renewed while holding a checkpoint: a clearing checkpoint is due (etcd's Renew proposes one). */
  #clears = new Set<bigint>();

  constructor(options: LessorOptions = {}) {
    this.#minTtlSeconds = options.minTtlSeconds ?? 1;
    this.#checkpointIntervalMs = options.checkpointIntervalMs ?? leaseCheckpointIntervalMs;
    this.#retryIntervalMs = options.expiredRetryIntervalMs ?? leaseExpiredRetryIntervalMs;
    this.#revokeRatePerSecond = options.revokeRatePerSecond ?? leaseRevokeRatePerSecond;
    assert(this.#revokeRatePerSecond >= 4, 'revokeRatePerSecond must be at least 4');
    assert(Number.isSafeInteger(this.#minTtlSeconds) && this.#minTtlSeconds > 0, 'minTtlSeconds must be a positive integer');
    assert(this.#checkpointIntervalMs > 0 && this.#retryIntervalMs > 0, 'lessor intervals must be positive');
  }

  /**
   * Reads the 'lease' bucket (etcd's initAndRecover); every lease starts as a follower's (never expiring).
   * Keys are attached afterwards by `store.setLeaseHooks(lessor)`.
   */
  static async load(backend: Backend, store: LessorStore, options: LessorOptions = {}): Promise<Lessor> {
    const lessor = new Lessor(options);
    lessor.setStore(store);
    for await (const [key, value] of backend.scan('lease')) {
      const r = decodeLeaseRecord(value);
      assert(r.id === leaseIdOfKey(key), 'lease record id differs from its key');
      lessor.#add(r.id, Math.max(r.ttlSeconds, lessor.#minTtlSeconds), r.remainingTtlSeconds);
    }
    return lessor;
  }

  /** The store revoke deletes through and persistence writes to (etcd's SetRangeDeleter); load sets it. */
  setStore(store: LessorStore): void {
    this.#store = store;
  }

  get primary(): boolean {
    return this.#primary;
  }

  get size(): number {
    return this.#leases.size;
  }

  // ---- apply path: deterministic, replicated ----

  /** Returns the lease with its granted TTL (raised to the minimum). */
  grant(id: bigint, ttlSeconds: number): { id: bigint; ttlSeconds: number } {
    if (id === 0n) throw new MvccError('leaseNotFound');
    if (ttlSeconds > leaseTtlSecondsMax) throw new MvccError('leaseTtlTooLarge');
    if (this.#leases.has(id)) throw new MvccError('leaseExists');
    const lease = this.#add(id, Math.max(Math.trunc(ttlSeconds), this.#minTtlSeconds), 0);
    this.#persist(lease);
    if (this.#primary) this.#unsettled.add(id);
    return { id, ttlSeconds: lease.ttlSeconds };
  }

  /** Deletes every attached key in one store revision (sorted, as etcd, so all members hash alike), then the lease. */
  revoke(id: bigint): void {
    const lease = this.#leases.get(id);
    if (lease === undefined) throw new MvccError('leaseNotFound');
    const store = this.#requireStore();
    const keys = [...lease.keys].sort().map(keyTextBytes);
    if (keys.length > 0) {
      const empty = new Uint8Array(0);
      store.txn({ compare: [], success: keys.map((key) => ({ deleteRange: { key, rangeEnd: empty, prevKv: false } })), failure: [] });
    }
    assert(lease.keys.size === 0, 'revoke left keys attached to the lease');
    this.#leases.delete(id);
    this.#unsettled.delete(id);
    this.#clears.delete(id);
    store.buffer.del('lease', leaseKey(id));
  }

  /** Records a replicated remaining TTL; it takes effect at the next promote (etcd's Checkpoint). */
  checkpoint(id: bigint, remainingTtlSeconds: number): void {
    const lease = this.#leases.get(id);
    if (lease === undefined) return; // revoked meanwhile: etcd ignores it too
    lease.remainingTtlSeconds = Math.max(0, Math.trunc(remainingTtlSeconds));
    this.#persist(lease);
    if (lease.remainingTtlSeconds === 0) this.#clears.delete(id);
    // The next checkpoint was scheduled when this one was handed out (apply has no clock).
  }

  exists(id: bigint): boolean {
    return this.#leases.has(id);
  }

  attach(id: bigint, key: Uint8Array): void {
    // A key naming a lease we do not have can only come from an inconsistent backend at open; etcd ignores it.
    this.#leases.get(id)?.keys.add(keyText(key));
  }

  detach(id: bigint, key: Uint8Array): void {
    this.#leases.get(id)?.keys.delete(keyText(key));
  }

  // ---- leader side: local, time-driven ----

  /** On becoming leader: each lease expires at now + extend + its remaining TTL (checkpointed if any, else its TTL). */
  promote(nowMs: number, options: { extendMs?: number } = {}): void {
    this.#primary = true;
    this.#extendMs = options.extendMs ?? 0;
    this.#expiries.clear();
    this.#checkpoints.clear();
    this.#unsettled.clear();
    for (const lease of this.#leases.values()) {
      lease.checkpointAtMs = -1;
      this.#refresh(lease, nowMs, this.#extendMs + this.#remainingMs(lease));
    }
    if (this.#leases.size >= this.#revokeRatePerSecond) this.#spreadPileUp(nowMs);
  }

  /**
   * etcd's Promote pile-up adjustment: after a leader change many leases can share one deadline (they were
   * all granted or renewed around one moment); delay the excess so no second holds more than 3/4 of the
   * revoke rate, keeping the revoke proposals from crowding out everything else.
   */
  #spreadPileUp(nowMs: number): void {
    const leases = [...this.#leases.values()].sort((a, b) => a.expiryMs - b.expiryMs || (a.id < b.id ? -1 : 1));
    const targetPerSecond = Math.floor((3 * this.#revokeRatePerSecond) / 4);
    let baseWindowMs = leases[0]!.expiryMs - nowMs;
    let nextWindowMs = baseWindowMs + 1000;
    let expires = 0;
    for (const lease of leases) {
      const remainingMs = lease.expiryMs - nowMs;
      if (remainingMs > nextWindowMs) {
        baseWindowMs = remainingMs;
        nextWindowMs = baseWindowMs + 1000;
        expires = 1;
        continue;
      }
      expires++;
      if (expires <= targetPerSecond) continue;
      // Leases further into the base window need less delay to land in the next free slot.
      const delayMs = (1000 * expires) / targetPerSecond - (remainingMs - baseWindowMs);
      nextWindowMs = baseWindowMs + delayMs;
      this.#refresh(lease, nowMs, delayMs + this.#extendMs + this.#remainingMs(lease));
    }
  }

  /** On losing leadership: no lease expires here any more. */
  demote(): void {
    this.#primary = false;
    this.#expiries.clear();
    this.#checkpoints.clear();
    this.#unsettled.clear();
    this.#clears.clear();
    for (const lease of this.#leases.values()) lease.expiryMs = Infinity;
  }

  /** Keepalive: the lease lives another full TTL from now. Returns the granted TTL. */
  renew(id: bigint, nowMs: number): number {
    if (!this.#primary) throw new NotPrimaryError();
    this.#settle(nowMs);
    const lease = this.#leases.get(id);
    // An expired lease is being revoked; etcd waits for that and then answers not found.
    if (lease === undefined || nowMs >= lease.expiryMs) throw new MvccError('leaseNotFound');
    if (lease.remainingTtlSeconds > 0) this.#clears.add(id);
    this.#refresh(lease, nowMs, lease.ttlSeconds * 1000);
    return lease.ttlSeconds;
  }

  /** Leases past their expiry, at most max; each is offered again only after the retry interval. */
  expired(nowMs: number, max: number): bigint[] {
    if (!this.#primary) return [];
    this.#settle(nowMs);
    const out: bigint[] = [];
    while (out.length < max) {
      const top = this.#expiries.peek();
      if (top === undefined || top.atMs > nowMs) break;
      this.#expiries.pop();
      const lease = this.#leases.get(top.id);
      if (lease === undefined || lease.heapAtMs !== top.atMs) continue; // stale entry
      if (nowMs < lease.expiryMs) continue;
      out.push(lease.id);
      lease.heapAtMs = nowMs + this.#retryIntervalMs;
      this.#expiries.push({ atMs: lease.heapAtMs, id: lease.id });
    }
    return out;
  }

  /** Remaining TTLs to replicate: clears after keepalives first, then checkpoints whose interval has passed. */
  checkpointsDue(nowMs: number, max: number): LeaseCheckpoint[] {
    if (!this.#primary) return [];
    this.#settle(nowMs);
    const out: LeaseCheckpoint[] = [];
    for (const id of this.#clears) {
      if (out.length >= max) return out;
      this.#clears.delete(id);
      if (this.#leases.has(id)) out.push({ id, remainingTtlSeconds: 0 });
    }
    while (out.length < max) {
      const top = this.#checkpoints.peek();
      if (top === undefined || top.atMs > nowMs) break;
      this.#checkpoints.pop();
      const lease = this.#leases.get(top.id);
      if (lease === undefined || lease.checkpointAtMs !== top.atMs || nowMs >= lease.expiryMs) continue;
      const remainingTtlSeconds = Math.ceil((lease.expiryMs - nowMs) / 1000);
      this.#scheduleCheckpoint(lease, nowMs);
      if (remainingTtlSeconds >= lease.ttlSeconds) continue;
      out.push({ id: lease.id, remainingTtlSeconds });
    }
    return out;
  }

  timeToLive(id: bigint, nowMs: number, withKeys: boolean): LeaseTimeToLive {
    const lease = this.#leases.get(id);
    if (lease === undefined) throw new MvccError('leaseNotFound');
    let ttlSeconds = lease.remainingTtlSeconds > 0 ? lease.remainingTtlSeconds : lease.ttlSeconds;
    if (this.#primary) {
      this.#settle(nowMs);
      ttlSeconds = Math.max(-1, Math.trunc((lease.expiryMs - nowMs) / 1000)) + 0; // + 0: no -0
    }
    const keys = withKeys ? [...lease.keys].sort().map(keyTextBytes) : [];
    return { id, ttlSeconds, grantedTtlSeconds: lease.ttlSeconds, keys };
  }

  /** The keys attached to a lease, in no order (none for an unknown lease): auth checks them. */
  keysOf(id: bigint): Uint8Array[] {
    const lease = this.#leases.get(id);
    return lease === undefined ? [] : [...lease.keys].map(keyTextBytes);
  }

  /** Every lease id with its granted TTL, by id. */
  leases(): Array<{ id: bigint; ttlSeconds: number }> {
    return [...this.#leases.values()]
      .map((l) => ({ id: l.id, ttlSeconds: l.ttlSeconds }))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  // ---- internals ----

  #add(id: bigint, ttlSeconds: number, remainingTtlSeconds: number): Lease {
    const lease: Lease = { id, ttlSeconds, remainingTtlSeconds, keys: new Set(), expiryMs: Infinity, heapAtMs: -1, checkpointAtMs: -1 };
    this.#leases.set(id, lease);
    return lease;
  }

  #persist(lease: Lease): void {
    const record = { id: lease.id, ttlSeconds: lease.ttlSeconds, remainingTtlSeconds: lease.remainingTtlSeconds };
    this.#requireStore().buffer.put('lease', leaseKey(lease.id), encodeLeaseRecord(record));
  }

  #requireStore(): LessorStore {
    assert(this.#store !== undefined, 'lessor used on the apply path before setStore');
    return this.#store;
  }

  /** etcd's RemainingTTL(): the checkpointed remaining TTL when set, else the full TTL. */
  #remainingMs(lease: Lease): number {
    return (lease.remainingTtlSeconds > 0 ? lease.remainingTtlSeconds : lease.ttlSeconds) * 1000;
  }

  /** Grants applied while primary start their clock at the first time we hear of: late, never early. */
  #settle(nowMs: number): void {
    for (const id of this.#unsettled) {
      const lease = this.#leases.get(id);
      if (lease !== undefined) this.#refresh(lease, nowMs, this.#remainingMs(lease));
    }
    this.#unsettled.clear();
  }

  #refresh(lease: Lease, nowMs: number, lifeMs: number): void {
    lease.expiryMs = nowMs + lifeMs;
    lease.heapAtMs = lease.expiryMs;
    this.#expiries.push({ atMs: lease.expiryMs, id: lease.id });
    // One pending checkpoint per lease: keepalives must not pile entries into the heap.
    if (lease.checkpointAtMs < nowMs) this.#scheduleCheckpoint(lease, nowMs);
  }

  /** etcd's scheduleCheckpointIfNeeded: only leases that outlive one more checkpoint interval. */
  #scheduleCheckpoint(lease: Lease, nowMs: number): void {
    if (lease.expiryMs - nowMs <= this.#checkpointIntervalMs) return;
    lease.checkpointAtMs = nowMs + this.#checkpointIntervalMs;
    this.#checkpoints.push({ atMs: lease.checkpointAtMs, id: lease.id });
  }
}
