/**
 * etcd's periodic corruption check, run by the leader: every member computes HashKV at the same revision;
 * a member whose hash differs from the leader's (at an equal compact revision) has a diverged key-value
 * history and gets a CORRUPT alarm, replicated through Raft, which clients see in Status and `alarm list`.
 * Members that are behind (revision not yet applied) or compacted differently are skipped, as etcd does.
 */
import type { Member } from '../api-types.js';
import type { Logger } from '../../config/log.js';

export interface HashAt {
  hash: number;
  compactRevision: number;
  revision: number;
}

export interface CorruptionHost {
  isLeader(): boolean;
  memberId: bigint;
  members(): Member[];
  /** This member's HashKV at `revision`. */
  localHash(revision: number): Promise<HashAt>;
  currentRevision(): number;
  /** Ask a peer for its HashKV at `revision` (undefined: unreachable or not there yet). */
  peerHash(member: Member, revision: number): Promise<HashAt | undefined>;
  raiseCorrupt(memberId: bigint): Promise<void>;
  logger: Logger;
}

/** etcd: --experimental-corrupt-check-time (off by default there); we check every 5 minutes. */
export const corruptCheckIntervalMs = 5 * 60 * 1000;

export async function checkCorruption(h: CorruptionHost): Promise<bigint[]> {
  if (!h.isLeader()) return [];
  const revision = h.currentRevision();
  let mine: HashAt;
  try {
    mine = await h.localHash(revision);
  } catch {
    return []; // compacted meanwhile: try next time
  }
  const corrupt: bigint[] = [];
  for (const m of h.members()) {
    if (m.id === h.memberId || m.isLearner) continue;
    const theirs = await h.peerHash(m, revision).catch(() => undefined);
    if (theirs === undefined || theirs.compactRevision !== mine.compactRevision) continue;
    if (theirs.hash !== mine.hash) {
      h.logger.error('member key-value hash differs from the leader\'s: raising CORRUPT', {
        member: m.id.toString(16), revision, leaderHash: mine.hash, memberHash: theirs.hash,
      });
      corrupt.push(m.id);
      await h.raiseCorrupt(m.id).catch(() => {});
    }
  }
  return corrupt;
}
