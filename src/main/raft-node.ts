/** The Raft core of a member, from its options and what the WAL recovered. */
import { randomBytes } from 'node:crypto';
import { raftInflightMsgsMax, raftMsgBytesMax, raftUncommittedBytesMax } from '../base/limits.js';
import { Prng } from '../base/prng.js';
import { RawNode } from '../raft/raw-node.js';
import { electionTicksOf } from '../node/apply/catch-up.js';
import type { MemberOptions } from '../config/member-options.js';
import type { MemberStorage } from './storage.js';

export function createRawNode(o: MemberOptions, memberId: bigint, storage: Pick<MemberStorage, 'walState' | 'snapshot' | 'applied'>): RawNode {
  const { walState, snapshot, applied } = storage;
  const node = new RawNode(
    {
      id: memberId,
      electionTicks: electionTicksOf(o.electionTimeoutMs, o.heartbeatIntervalMs),
      heartbeatTicks: 1,
      preVote: o.preVote ?? true,
      checkQuorum: true,
      // A slow local fsync must not hold replies a quorum made durable; the store flushes only what is durable.
      applyUnstable: true,
      maxMsgBytes: raftMsgBytesMax,
      maxInflightMsgs: raftInflightMsgsMax,
      maxUncommittedBytes: raftUncommittedBytesMax,
      rng: new Prng(randomBytes(4).readUInt32BE(0)),
      logger: (line) => o.logger.debug(line),
    },
    { hardState: walState.hardState, snapshot: walState.snapshot, entries: walState.entries, applied },
  );
  if (snapshot !== undefined) node.compact(snapshot, 0);
  return node;
}
