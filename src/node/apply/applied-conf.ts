/**
 * The Raft configuration (voters, learners) as last applied: at start from the restored node, then by each
 * applied conf change or installed snapshot. The apply loop is its one writer; membership changes,
 * maintenance (MoveLeader, the corruption check) and the server read it. Built before all of them, so none
 * reaches the apply loop through a closure that fetched it once built.
 */
import type { ConfState } from '../../raft/types.js';

export class AppliedConf {
  #voters: bigint[] = [];
  #learners: bigint[] = [];

  get voters(): bigint[] {
    return this.#voters;
  }

  get learners(): bigint[] {
    return this.#learners;
  }

  set(cs: Pick<ConfState, 'voters' | 'learners'>): void {
    this.#voters = cs.voters;
    this.#learners = cs.learners;
  }
}
