/**
 * The Raft configuration (voters, learners, witnesses) as last applied: at start from the restored node, then by each
 * applied conf change or installed snapshot. The apply loop is its one writer; membership changes,
 * maintenance (MoveLeader, the corruption check) and the server read it. Built before all of them, so none
 * reaches the apply loop through a closure that fetched it once built.
 */
import type { ConfState } from '../../raft/types.js';

export class AppliedConf {
  #voters: bigint[] = [];
  #learners: bigint[] = [];
  /** The voters that hold no data (src/raft/witness.ts). */
  #witnesses: bigint[] = [];

  get voters(): bigint[] {
    return this.#voters;
  }

  get learners(): bigint[] {
    return this.#learners;
  }

  get witnesses(): bigint[] {
    return this.#witnesses;
  }

  set(cs: ConfState): void {
    this.#voters = cs.voters;
    this.#learners = cs.learners;
    this.#witnesses = cs.witnesses ?? [];
  }

  /** A copy, with `witnesses` only when there are some (as the Raft core hands it out). */
  toConfState(): ConfState {
    const cs: ConfState = { voters: [...this.#voters], learners: [...this.#learners] };
    if (this.#witnesses.length > 0) cs.witnesses = [...this.#witnesses];
    return cs;
  }
}
