/** The request pipeline's space check before a write is proposed (etcd's quota). */
import type { TxnRequest } from '../../mvcc/types.js';
import { EtcdError } from '../errors.js';
import type { Logger } from '../../config/log.js';
import type { Proposer } from './proposer.js';
import type { ServerState } from '../apply/server-state.js';
import type { DiskRoom } from './disk-room.js';

export interface QuotaHost {
  memberId: bigint;
  state(): ServerState;
  proposer: Proposer;
  logger: Logger;
  /** The disk's room for writes, counted on the write path (absent: not watched, as in the simulator). */
  diskRoom?: DiskRoom | undefined;
}

/**
 * etcd's quota check before proposing: over the quota, raise NOSPACE (once) and refuse. First the store
 * may reclaim what compaction deleted (bbolt reuses freed pages at once; LevelDB frees them when it
 * compacts its tables), so rewriting compacted keys never fills the quota.
 */
export function checkQuota(h: QuotaHost, bytes: number): Promise<void> {
  try {
    if (withinQuota(h, bytes)) return Promise.resolve();
  } catch (error) {
    return Promise.reject(error);
  }
  return reclaimOrRefuse(h, bytes);
}

/** Over the quota by withinQuota: reclaim what compaction freed, then admit, or raise NOSPACE and refuse. */
export async function reclaimOrRefuse(h: QuotaHost, bytes: number): Promise<void> {
  await h.state().store.reclaim();
  const state = h.state();
  if (!state.store.overQuota(bytes)) return;
  if (!state.alarms.list().some((a) => a.alarm === 'NOSPACE' && a.memberId === h.memberId)) {
    h.logger.warn('backend quota exceeded; raising NOSPACE', { dbSizeBytes: state.store.dbSizeBytes() });
    void h.proposer
      .propose({ kind: 'alarm', action: 'activate', memberId: h.memberId, alarm: 'NOSPACE' })
      .catch(() => {});
  }
  throw new EtcdError('noSpace');
}

/**
 * checkQuota's synchronous part, for the put path to skip a promise when there is room (issue 34): throws
 * noSpace when refused at once; true when the write fits; false when only a reclaim (checkQuota) can tell.
 */
export function withinQuota(h: QuotaHost, bytes: number): boolean {
  // With NOSPACE raised (the quota, or a disk nearly full: main/disk-watch.ts), the apply path would refuse
  // this write anyway; refused here, it takes no room in the log of a disk that has little left.
  if (bytes > 0 && h.state().alarms.list().some((a) => a.alarm === 'NOSPACE')) {
    h.diskRoom?.forget(); // what it saw grows stale while recovery frees space (disk-room.ts)
    throw new EtcdError('noSpace');
  }
  // Refused before the alarm is even raised: the disk will not hold it and what recovery needs.
  if (bytes > 0 && h.diskRoom?.admit(bytes) === false) throw new EtcdError('noSpace');
  return !h.state().store.overQuota(bytes);
}

/** The bytes a txn would write (keys and values of its puts, nested txns included). */
export function txnBytes(txn: TxnRequest): number {
  let n = 0;
  for (const op of [...txn.success, ...txn.failure]) {
    if ('put' in op) n += op.put.key.length + op.put.value.length;
    else if ('txn' in op) n += txnBytes(op.txn);
  }
  return n;
}
