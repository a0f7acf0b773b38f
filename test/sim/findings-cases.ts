/**
 * Minimal scripted cases for the core bugs recorded in test/sim/FINDINGS.md. Not part of the green suite (they
 * fail while the bugs exist): run `npx tsx test/sim/findings-cases.ts`; each prints PASS or FAIL with why.
 * When a case passes, move it into a golden test file and mark the finding fixed.
 */
import { MessageType } from '../../src/raft/types.js';
import type { Cluster } from './cluster.js';
import { calmCluster, commit, electionTicks, makeLeader } from './story.js';

type Case = { name: string; run: () => string | undefined };

/**
 * F1: the leader removes itself from a 2-voter configuration while another append is in flight. It commits
 * the removal on the follower's ack, applies it and steps down in the same step, without ever sending the new
 * commit index; the survivor still has {1,2}, cannot win an election without the stopped node, and is stuck.
 * (etcd-raft broadcasts the new commit when it advances; etcd also stops a removed member only 10 ticks later.)
 */
function leaderRemovesItselfFromTwo(): string | undefined {
  const c = calmCluster(2);
  makeLeader(c, 1);
  commit(c);
  const r = c.proposeConfChange(1, { type: 'removeNode', nodeId: 1n });
  if (!r.ok) return `removal refused: ${r.error}`;
  // A second append in flight when the removal commits (in seed 15, a proposal forwarded by n2).
  c.runSteps(1);
  c.propose(1);
  const took = c.runUntil(() => c.node(2).role === 'leader' && c.node(2).confState.voters.length === 1, 10 * electionTicks);
  if (took === undefined) return `n2 never leads alone: ${state(c, 2)}`;
  return undefined;
}

/**
 * F2: a learner promoted while cut off never learns of its promotion; the sole old voter loses leadership
 * (CheckQuorum) and then needs the learner's vote, which a learner refuses. etcd-raft lets learners vote for
 * exactly this reason.
 */
function promotedLearnerMustVote(): string | undefined {
  const c = calmCluster(1);
  makeLeader(c, 1);
  if (!c.proposeConfChange(1, { type: 'addLearner', nodeId: 2n }).ok) return 'addLearner refused';
  c.addNode(2);
  commit(c);
  c.runTicks(electionTicks);
  c.net.isolate(2n, c.ids());
  const r = c.proposeConfChange(1, { type: 'addVoter', nodeId: 2n });
  if (!r.ok) return `promotion refused: ${r.error}`;
  c.runTicks(3 * electionTicks);
  c.net.healAll();
  const took = c.runUntil(() => c.leader() !== undefined && c.leader()!.confState.voters.length === 2, 10 * electionTicks);
  if (took === undefined) return `no leader of {1,2}: ${state(c, 1)}; ${state(c, 2)}`;
  return undefined;
}

/**
 * F3: every MsgApp carrying a new entry is lost (a lossy link; no unreachable report). Heartbeats keep flowing,
 * so the leader should notice (etcd-raft: on a heartbeat response from a follower behind, send an append even
 * when paused) and resend. Instead the entry is never replicated and never committed.
 */
function lostAppendIsResent(): string | undefined {
  const c = calmCluster(3, { raft: { maxInflightMsgs: 4 } });
  makeLeader(c, 1);
  commit(c);
  const { proposalId } = c.propose(1);
  c.dropInFlight((m) => m.type === MessageType.App && m.entries.length > 0);
  const took = c.runUntil(() => c.node(2).sm.ids.has(proposalId) && c.node(3).sm.ids.has(proposalId), 10 * electionTicks);
  if (took === undefined) return `entry never replicated: ${state(c, 1)}; ${state(c, 2)}`;
  return undefined;
}

/**
 * F4: a candidate wins with other voters' grants before its own {term, vote} is durable, leads (appends X and
 * replicates it), crashes before its disk syncs, restarts in the previous term, campaigns again, is re-granted
 * by the same voters (they voted for it in that term) and leads the same term a second time with a different
 * log (Y where X was): log matching breaks. A leader must not act before its term is durable.
 */
function leaderOnlyAfterDurableTerm(): string | undefined {
  const c = calmCluster(5, { raft: { preVote: false } });
  makeLeader(c, 1);
  commit(c);
  // Syncs take 8 ticks: shorter than an election timeout (a fixed core then wins once its vote is durable).
  const slow = { syncMinSteps: 80, syncMaxSteps: 80, slowRate: 0, slowMinSteps: 0, slowMaxSteps: 0 };
  c.node(3).disk.profile = slow;
  c.transferLeader(1, 3);
  if (!c.runEventsUntil(() => c.node(3).role === 'leader', 2 * electionTicks)) return 'n3 did not win';
  const term = c.node(3).hs.term;
  // Fixed behaviour: n3 leads only once its term is durable.
  if (c.node(3).disk.durable.hardState.term >= term) return undefined;
  // Its appends reach n1 only; it accepts X; it crashes before its disk syncs anything.
  for (const to of [2n, 4n, 5n]) c.net.cut(3n, to);
  c.dropInFlight((m) => m.from === 3n && m.to !== 1n);
  c.propose(3);
  c.runTicks(2);
  c.crash(3);
  c.dropInFlight((m) => m.from === 3n || m.to === 3n);
  c.runTicks(2);
  c.net.healAll();
  c.node(3).disk.profile = { ...slow, syncMinSteps: 1, syncMaxSteps: 1 };
  for (const id of [1, 2, 4, 5]) c.pauseTicks(id, true);
  c.restart(3);
  try {
    if (!c.runEventsUntil(() => c.node(3).role === 'leader', 4 * electionTicks)) return undefined;
    if (c.node(3).hs.term !== term) return undefined;
    c.propose(3);
    c.runTicks(3);
  } catch (err) {
    return `n3 led term ${term} twice: ${String(err)}`;
  }
  return `n3 led term ${term} twice (no violation surfaced)`;
}

function state(c: Cluster, id: number): string {
  const n = c.node(id);
  if (!n.up) return `n${id} down`;
  const st = n.raw!.status();
  return `n${id} ${st.role} term ${st.term} commit ${st.commit} last ${st.lastIndex} voters [${st.confState.voters.join(',')}]`;
}

const cases: Case[] = [
  { name: 'F1 leader removes itself from a 2-voter configuration', run: leaderRemovesItselfFromTwo },
  { name: 'F2 a promoted learner that missed its promotion must vote', run: promotedLearnerMustVote },
  { name: 'F3 a lost append is resent after heartbeats', run: lostAppendIsResent },
  { name: 'F4 a leader acts only once its term is durable', run: leaderOnlyAfterDurableTerm },
];

for (const k of cases) {
  let why: string | undefined;
  try {
    why = k.run();
  } catch (err) {
    why = `threw ${String(err)}`;
  }
  console.log(`${why === undefined ? 'PASS' : 'FAIL'} ${k.name}${why === undefined ? '' : `: ${why}`}`);
}
