/**
 * The apply path (etcd's applierV3): turns one committed entry into state changes. Synchronous and
 * deterministic: it reads only the entry and the current state; every write goes to the store's write buffer
 * and is flushed with the consistent index, so an entry's effects are persisted all together or not at all.
 *
 * Results are returned to the caller, which wakes the proposer (if this member proposed the entry).
 */
import { applyAuthRequest, AuthError, checkDeleteRange, checkLeaseKeys, checkPut, checkTxn, isAuthRequest, type AuthInfo, type AuthRequestKind, type AuthStore } from '../../auth/index.js';
import { assert } from '../../base/assert.js';
import type { ConfChange, ConfState } from '../../raft/types.js';
import {
  MvccError,
  type AlarmMember,
  type AlarmType,
  type DeleteRangeRequest,
  type DeleteRangeResponse,
  type PutRequest,
  type PutResponse,
  type TxnRequest,
  type TxnResponse,
} from '../../mvcc/types.js';
import type { WriteBuffer } from '../../mvcc/backend.js';
import type { Membership, Member } from '../membership/membership.js';
import type { RaftRequest } from '../driver/raft-request.js';
import { txnWrites } from '../request/txn-writes.js';

/** What apply needs from the MVCC store. */
export interface ApplyStore {
  readonly revision: number;
  readonly buffer: WriteBuffer;
  put(req: PutRequest): PutResponse;
  deleteRange(req: DeleteRangeRequest): DeleteRangeResponse;
  txn(req: TxnRequest): TxnResponse;
  compact(revision: number): { physicalDone: Promise<void> };
  /** The index of the entry being applied: the apply loop records it once per entry (apply-loop.ts). */
  readonly consistentIndex: number;
}

/** What apply needs from the lessor. */
export interface ApplyLessor {
  grant(id: bigint, ttlSeconds: number): { id: bigint; ttlSeconds: number };
  revoke(id: bigint): void;
  checkpoint(id: bigint, remainingTtlSeconds: number): void;
  keysOf(id: bigint): Iterable<Uint8Array>;
}

/** What apply needs from the alarm store. */
export interface ApplyAlarms {
  activate(memberId: bigint, alarm: AlarmType): AlarmMember | undefined;
  deactivate(memberId: bigint, alarm: AlarmType): AlarmMember | undefined;
  list(): AlarmMember[];
}

export type ApplyResult =
  | { ok: true; value: unknown; revision: number }
  | { ok: false; error: unknown; revision: number };

export interface ConfChangeApplied {
  confState: ConfState;
  removedSelf: boolean;
}

export class Applier {
  readonly #store: ApplyStore;
  readonly #lessor: ApplyLessor;
  readonly #alarms: ApplyAlarms;
  readonly #membership: Membership;
  readonly #auth: AuthStore;
  readonly #leaseKeys: (id: bigint) => Iterable<Uint8Array>;

  constructor(parts: { store: ApplyStore; lessor: ApplyLessor; alarms: ApplyAlarms; membership: Membership; auth: AuthStore }) {
    this.#store = parts.store;
    this.#lessor = parts.lessor;
    this.#alarms = parts.alarms;
    this.#membership = parts.membership;
    this.#auth = parts.auth;
    this.#leaseKeys = (id) => parts.lessor.keysOf(id);
  }

  /** Apply one normal entry's request; the apply loop has already recorded `index` as the consistent index. */
  applyRequest(index: number, req: RaftRequest): ApplyResult {
    assert(this.#store.consistentIndex === index, `applying entry ${index} at consistent index ${this.#store.consistentIndex}`);
    try {
      this.#checkPermission(req);
      const value = isAuthRequest(req) ? applyAuthRequest(this.#auth, req, req.auth, index) : this.#dispatch(req);
      return { ok: true, value, revision: this.#store.revision };
    } catch (error) {
      // Only expected refusals may pass; anything else is a bug in apply and must crash the member,
      // since members would otherwise diverge.
      if (!(error instanceof MvccError) && !(error instanceof AuthError)) throw error;
      return { ok: false, error, revision: this.#store.revision };
    }
  }

  /** etcd's authApplierV3: KV writes and lease revokes are judged here, at the auth state of this entry. */
  #checkPermission(req: RaftRequest): void {
    if (!this.#auth.enabled) return;
    const ai: AuthInfo | undefined = req.auth;
    switch (req.kind) {
      case 'put':
        return checkPut(this.#auth, ai, req.put, this.#leaseKeys);
      case 'deleteRange':
        return checkDeleteRange(this.#auth, ai, req.deleteRange);
      case 'txn':
        return checkTxn(this.#auth, ai, req.txn, this.#leaseKeys);
      case 'leaseRevoke':
        return checkLeaseKeys(this.#auth, ai, req.leaseId, this.#leaseKeys);
      default:
    }
  }

  #dispatch(req: Exclude<RaftRequest, { kind: AuthRequestKind }>): unknown {
    switch (req.kind) {
      case 'put':
        this.#refuseWhenNoSpace();
        return this.#store.put(req.put);
      case 'deleteRange':
        return this.#store.deleteRange(req.deleteRange);
      case 'txn':
        if (txnWrites(req.txn).puts) this.#refuseWhenNoSpace();
        return this.#store.txn(req.txn);
      case 'compact': {
        const { physicalDone } = this.#store.compact(req.revision);
        return { physicalDone };
      }
      case 'leaseGrant':
        this.#refuseWhenNoSpace();
        return this.#lessor.grant(req.leaseId, req.ttlSeconds);
      case 'leaseRevoke':
        this.#lessor.revoke(req.leaseId);
        return {};
      case 'leaseCheckpoint':
        for (const c of req.checkpoints) this.#lessor.checkpoint(c.leaseId, c.remainingTtlSeconds);
        return {};
      case 'alarm':
        return req.action === 'activate'
          ? this.#alarms.activate(req.memberId, req.alarm)
          : this.#alarms.deactivate(req.memberId, req.alarm);
      case 'publish':
        this.#membership.setAttributes(req.memberId, req.name, req.clientUrls, this.#store.buffer);
        return {};
      case 'memberUpdate':
        this.#membership.setPeerUrls(req.memberId, req.peerUrls, this.#store.buffer);
        return {};
      case 'clusterVersionSet':
        this.#membership.setClusterVersion(req.version, this.#store.buffer);
        return {};
    }
  }

  /** etcd's applierV3Capped: with NOSPACE raised, only deletes, reads, compaction and alarms get through. */
  #refuseWhenNoSpace(): void {
    if (this.#alarms.list().some((a) => a.alarm === 'NOSPACE')) throw new MvccError('noSpace');
  }

  /**
   * Apply a committed membership change to the member list. The caller has already passed `cc` to
   * RawNode.applyConfChange (the Raft configuration) and hands in the resulting ConfState.
   */
  applyConfChange(index: number, cc: ConfChange, member: Member, selfId: bigint): boolean {
    assert(this.#store.consistentIndex === index, `applying conf change ${index} at consistent index ${this.#store.consistentIndex}`);
    const buffer = this.#store.buffer;
    switch (cc.type) {
      case 'addLearner':
        if (!this.#membership.isRemoved(member.id)) this.#membership.upsert({ ...member, isLearner: true }, buffer);
        return false;
      case 'addVoter':
      case 'addWitness': {
        // A witness is a voting member; that it holds no data is in the Raft configuration (ConfState.witnesses).
        if (this.#membership.isRemoved(member.id)) return false;
        const existing = this.#membership.get(member.id);
        this.#membership.upsert({ ...(existing ?? member), isLearner: false }, buffer);
        return false;
      }
      case 'removeNode':
        this.#membership.remove(cc.nodeId, buffer);
        return cc.nodeId === selfId;
    }
  }
}
