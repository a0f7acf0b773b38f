/**
 * Majority arithmetic over a set of voters. Pure functions; the caller passes a scratch array so the hot path
 * (one commit computation per acknowledgement) allocates nothing.
 */
import type { NodeId } from './types.js';

export function quorumSize(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

/**
 * The largest index replicated on a majority of `voters`: sort the match indexes descending and take the
 * quorum-th. Worked example: matches {7, 5, 9} → sorted 9, 7, 5 → quorum 2 → 7.
 * An empty voter set commits nothing (returns 0... callers never have one while leading).
 */
export function committedIndex(
  voters: readonly NodeId[],
  matchOf: (id: NodeId) => number,
  scratch: number[],
): number {
  const n = voters.length;
  if (n === 0) return 0;
  scratch.length = n;
  for (let i = 0; i < n; i++) scratch[i] = matchOf(voters[i]!);
  // Insertion sort, descending: n ≤ 7 in practice, and no comparator closure allocation.
  for (let i = 1; i < n; i++) {
    const v = scratch[i]!;
    let j = i - 1;
    while (j >= 0 && scratch[j]! < v) {
      scratch[j + 1] = scratch[j]!;
      j--;
    }
    scratch[j + 1] = v;
  }
  return scratch[quorumSize(n) - 1]!;
}

export type VoteResult = 'won' | 'lost' | 'pending';

/** Tally: won with a majority of grants, lost once a majority can no longer be reached. */
export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  const q = quorumSize(voters.length);
  if (granted >= q) return 'won';
  if (voters.length - rejected < q) return 'lost';
  return 'pending';
}

/** How many of `voters` satisfy `active`. */
export function countActive(voters: readonly NodeId[], active: (id: NodeId) => boolean): number {
  let n = 0;
  for (const id of voters) if (active(id)) n++;
  return n;
}
