/** (Pre-)candidate message handling: count votes; a leader of our term turns us back into a follower. */
import type { Raft } from './raft.js';
import { handleAppend, handleHeartbeat, handleSnapshot } from './step-follower.js';
import { MessageType } from './types.js';
import type { Message } from './types.js';

export function stepCandidate(r: Raft, m: Message): void {
  const myVoteResp = r.role === 'preCandidate' ? MessageType.PreVoteResp : MessageType.VoteResp;
  switch (m.type) {
    case MessageType.Prop:
      r.trace('dropped proposal: no leader');
      return;
    case MessageType.App:
      r.becomeFollower(m.term, m.from);
      handleAppend(r, m);
      return;
    case MessageType.Heartbeat:
      r.becomeFollower(m.term, m.from);
      handleHeartbeat(r, m);
      return;
    case MessageType.Snap:
      r.becomeFollower(m.term, m.from);
      handleSnapshot(r, m);
      return;
    case MessageType.PreVoteResp:
    case MessageType.VoteResp:
      // A pre-vote grant carries term+1 (our prospective term); a real vote carries ours. Anything else is
      // a stale answer from an earlier election.
      if (m.type !== myVoteResp) return;
      if (m.type === MessageType.PreVoteResp && !m.reject && m.term !== r.term + 1) return;
      if (!r.votingMembers().includes(m.from)) return;
      r.poll(m.from, !m.reject);
      return;
    default:
      return;
  }
}
