/**
 * The membership configuration: voters and learners (disjoint), and among the voters the witnesses (voters
 * that hold no data, src/raft/witness.ts). Single-server changes only (one at a time), so there is never a
 * joint configuration. Ids are kept sorted so every node iterates them identically.
 */
import { assert } from '../base/assert.js';
import type { ConfChange, ConfState, NodeId } from './types.js';

export class MemberConfig {
  #voters: NodeId[];
  #learners: NodeId[];
  /** A subset of #voters. */
  #witnesses: NodeId[];

  constructor(state: ConfState) {
    this.#voters = sortedUnique(state.voters);
    this.#learners = sortedUnique(state.learners);
    this.#witnesses = sortedUnique(state.witnesses ?? []);
    for (const l of this.#learners) assert(!this.#voters.includes(l), `node ${l} is both voter and learner`);
    for (const w of this.#witnesses) assert(this.#voters.includes(w), `witness ${w} is not a voter`);
  }

  get voters(): readonly NodeId[] {
    return this.#voters;
  }

  get learners(): readonly NodeId[] {
    return this.#learners;
  }

  get witnesses(): readonly NodeId[] {
    return this.#witnesses;
  }

  /** The voters that hold data (every voter but the witnesses). */
  dataVoters(): NodeId[] {
    return this.#voters.filter((v) => !this.#witnesses.includes(v));
  }

  isWitness(id: NodeId): boolean {
    return this.#witnesses.includes(id);
  }

  isVoter(id: NodeId): boolean {
    return this.#voters.includes(id);
  }

  isLearner(id: NodeId): boolean {
    return this.#learners.includes(id);
  }

  isMember(id: NodeId): boolean {
    return this.isVoter(id) || this.isLearner(id);
  }

  /** Every member, voters first. */
  members(): NodeId[] {
    return [...this.#voters, ...this.#learners];
  }

  /** Apply a committed change. Idempotent: re-adding an existing role or removing a non-member is a no-op. */
  apply(cc: ConfChange): void {
    const id = cc.nodeId;
    switch (cc.type) {
      case 'addVoter':
        this.#learners = this.#learners.filter((x) => x !== id);
        if (!this.#voters.includes(id)) this.#voters = sortedUnique([...this.#voters, id]);
        return;
      case 'addWitness':
        // Only a new member becomes a witness (the leader refuses anything else): a member keeps its role.
        if (this.isMember(id)) return;
        this.#voters = sortedUnique([...this.#voters, id]);
        this.#witnesses = sortedUnique([...this.#witnesses, id]);
        return;
      case 'addLearner':
        // Demoting a voter to learner is not supported (the leader refuses to propose it).
        if (this.#voters.includes(id)) return;
        if (!this.#learners.includes(id)) this.#learners = sortedUnique([...this.#learners, id]);
        return;
      case 'removeNode':
        this.#voters = this.#voters.filter((x) => x !== id);
        this.#learners = this.#learners.filter((x) => x !== id);
        this.#witnesses = this.#witnesses.filter((x) => x !== id);
        return;
    }
  }

  /** `witnesses` is present only when there are some (configurations without witnesses look as before). */
  toConfState(): ConfState {
    const cs: ConfState = { voters: [...this.#voters], learners: [...this.#learners] };
    if (this.#witnesses.length > 0) cs.witnesses = [...this.#witnesses];
    return cs;
  }
}

function sortedUnique(ids: readonly NodeId[]): NodeId[] {
  const out = [...new Set(ids)];
  out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return out;
}

const typeCodes: Record<ConfChange['type'], number> = { addVoter: 1, addLearner: 2, removeNode: 3, addWitness: 4 };
const typeByCode: Record<number, ConfChange['type']> = { 1: 'addVoter', 2: 'addLearner', 3: 'removeNode', 4: 'addWitness' };

/**
 * The data of a ConfChange entry: [type u8][nodeId u64 big-endian][context bytes]. The application decodes it
 * with decodeConfChange before calling RawNode.applyConfChange.
 */
export function encodeConfChange(cc: ConfChange): Uint8Array {
  assert(cc.nodeId > 0n && cc.nodeId < 1n << 64n, `conf change node id out of range: ${cc.nodeId}`);
  const out = new Uint8Array(9 + cc.context.byteLength);
  const view = new DataView(out.buffer);
  view.setUint8(0, typeCodes[cc.type]);
  view.setBigUint64(1, cc.nodeId);
  out.set(cc.context, 9);
  return out;
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  assert(data.byteLength >= 9, 'conf change entry too short');
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const type = typeByCode[view.getUint8(0)];
  assert(type !== undefined, `unknown conf change type ${view.getUint8(0)}`);
  return { type, nodeId: view.getBigUint64(1), context: data.slice(9) };
}
