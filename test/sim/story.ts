/**
 * Helpers for the golden interaction stories (test/sim/r*.test.ts): a calm cluster (perfect links of one step,
 * one-step disks, PreVote and CheckQuorum on, electionTicks 10, heartbeatTicks 1) and the few moves every
 * story makes: wait for a leader, make a given node leader, commit a proposal everywhere.
 */
import { Cluster, type ClusterOptions } from './cluster.js';
import type { SimNode } from './sim-node.js';
import { decodeProposal } from './state-machine.js';

export const electionTicks = 10;

export function calmCluster(voters: number, options: Partial<ClusterOptions> = {}): Cluster {
  return new Cluster({
    seed: 1,
    voters,
    ...options,
    raft: { electionTicks, heartbeatTicks: 1, preVote: true, checkQuorum: true, ...options.raft },
  });
}

/** Wait until an up data member believes it leads (a witness leads only to hand over); returns it. */
export function waitForLeader(c: Cluster, maxTicks = 4 * electionTicks): SimNode {
  const took = c.runUntil(() => c.dataLeader() !== undefined, maxTicks);
  if (took === undefined) throw new Error(`no leader within ${maxTicks} ticks`);
  return c.dataLeader()!;
}

/** Elect whoever times out first, then hand leadership to `id` with a leader transfer. */
export function makeLeader(c: Cluster, id: number): SimNode {
  const first = waitForLeader(c);
  if (first.id !== BigInt(id)) {
    c.transferLeader(first.id, id);
    const took = c.runUntil(() => c.leader()?.id === BigInt(id), 3 * electionTicks);
    if (took === undefined) throw new Error(`could not make n${id} leader`);
  }
  c.runTicks(2);
  return c.leader()!;
}

export interface CommitOptions {
  /** Node to propose on (default: the leader). */
  on?: number;
  maxTicks?: number;
  /** Nodes that must apply it (default: every up data member; a witness applies nothing). */
  among?: number[];
}

/** Propose a fresh put and run until the nodes in `among` (default: all up nodes) applied it. */
export function commit(c: Cluster, options: CommitOptions = {}): number {
  const target = options.on ?? Number(c.leader()?.id ?? 1n);
  const maxTicks = options.maxTicks ?? 3 * electionTicks;
  const { proposalId, result } = c.propose(target, undefined);
  if (!result.ok) throw new Error(`proposal refused on n${target}: ${result.error}`);
  const ok = c.runUntil(() => appliedOnAllUp(c, proposalId, options.among), maxTicks);
  if (ok === undefined) throw new Error(`proposal ${proposalId} not applied everywhere within ${maxTicks} ticks`);
  return proposalId;
}

export function appliedOnAllUp(c: Cluster, proposalId: number, among?: number[]): boolean {
  const nodes = among === undefined ? [...c.nodes.values()] : among.map((id) => c.node(id));
  for (const n of nodes) if (n.up && !n.removed && !n.witness && !n.sm.ids.has(proposalId)) return false;
  return true;
}

/** The terms of a node's log at the given indexes (undefined where compacted or absent). */
export function termsAt(n: SimNode, indexes: number[]): (number | undefined)[] {
  return indexes.map((i) => n.log.term(i));
}

/** The log index at which `node` holds proposal `proposalId` (searching its in-memory log), or undefined. */
export function indexOfProposal(n: SimNode, proposalId: number): number | undefined {
  for (const e of n.log.entries) if (decodeProposal(e.data) === proposalId) return e.index;
  return undefined;
}

/** The first index of the node's log holding an entry of its current term, or undefined. */
export function firstIndexOfTerm(n: SimNode): number | undefined {
  return n.log.entries.find((e) => e.term === n.hs.term)?.index;
}
