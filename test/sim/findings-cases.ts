/**
 * Minimal scripted cases for the core bugs recorded in test/sim/FINDINGS.md. Not part of the green suite (they
 * fail while the bugs exist): run `npx tsx test/sim/findings-cases.ts`; each prints PASS or FAIL with why.
 * When a case passes, move it into test/sim/regressions.test.ts and mark the finding fixed.
 */
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

function state(c: Cluster, id: number): string {
  const n = c.node(id);
  if (!n.up) return `n${id} down`;
  const st = n.raw!.status();
  return `n${id} ${st.role} term ${st.term} commit ${st.commit} last ${st.lastIndex} voters [${st.confState.voters.join(',')}]`;
}

const cases: Case[] = [
  { name: 'F1 leader removes itself from a 2-voter configuration', run: leaderRemovesItselfFromTwo },
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
