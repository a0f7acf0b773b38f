/**
 * etcd's --experimental-initial-corrupt-check (etcdserver/corrupt.go InitialCheck): a restarting member,
 * before it serves clients or joins Raft, computes HashKV at its current revision and asks every peer for
 * its HashKV at that revision. A peer with the same compact revision but a different hash means this
 * member's data diverged: it refuses to start ("… found data inconsistency with peers"). Peers that are
 * unreachable, behind (future revision) or compacted past it (this member is behind) are logged and skipped,
 * as etcd does; a new member (no data yet) is not checked.
 */
import type { Member } from '../api-types.js';
import type { HashAt } from './corruption-check.js';
import type { Logger } from '../../config/log.js';

export interface InitialCheckHost {
  memberId: bigint;
  members: readonly Member[];
  /** HashKV at this member's current revision. */
  localHash(): Promise<HashAt>;
  /** The peer's HashKV at `revision`; rejects with the peer's error (code 'futureRev', 'compacted', …). */
  peerHash(url: string, revision: number): Promise<HashAt>;
  logger: Logger;
}

export class InitialCorruptionError extends Error {
  override name = 'InitialCorruptionError';
}

export async function initialCorruptCheck(h: InitialCheckHost): Promise<void> {
  const self = h.memberId.toString(16);
  const mine = await h.localHash();
  h.logger.info('starting initial corruption check', { 'local-member-id': self });
  const peers = h.members.filter((m) => m.id !== h.memberId && m.peerUrls.length > 0);
  const answers = await Promise.all(peers.map((m) => askAny(h, m, mine.revision)));
  let mismatch = 0;
  for (const [i, answer] of answers.entries()) {
    const fields = {
      'local-member-id': self, 'local-member-revision': mine.revision, 'local-member-compact-revision': mine.compactRevision,
      'local-member-hash': mine.hash, 'remote-peer-id': peers[i]!.id.toString(16),
    };
    if ('error' in answer) {
      const why = answer.code === 'futureRev' ? 'cannot fetch hash from slow remote peer'
        : answer.code === 'compacted' ? 'cannot fetch hash from remote peer; local member is behind'
        : 'cannot fetch hash from remote peer';
      h.logger.warn(why, { ...fields, error: answer.error });
      continue;
    }
    const theirs = { ...fields, 'remote-peer-revision': answer.revision, 'remote-peer-compact-revision': answer.compactRevision, 'remote-peer-hash': answer.hash };
    if (answer.hash === mine.hash) continue;
    if (answer.compactRevision === mine.compactRevision) {
      h.logger.warn('found different hash values from remote peer', theirs);
      mismatch += 1;
    } else {
      h.logger.warn('found different compact revision values from remote peer', theirs);
    }
  }
  if (mismatch > 0) throw new InitialCorruptionError(`${self} found data inconsistency with peers`);
  h.logger.info('initial corruption checking passed; no corruption', { 'local-member-id': self });
}

type Answer = HashAt | { error: string; code?: string };

/** The first of the peer's URLs that answers. */
async function askAny(h: InitialCheckHost, m: Member, revision: number): Promise<Answer> {
  let last: Answer = { error: 'no peer URL' };
  for (const url of m.peerUrls) {
    try {
      return await h.peerHash(url, revision);
    } catch (error) {
      last = { error: error instanceof Error ? error.message : String(error), ...codeOf(error) };
      if (last.code === 'futureRev' || last.code === 'compacted') return last;
    }
  }
  return last;
}

function codeOf(error: unknown): { code?: string } {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? { code } : {};
}
