/** planClusterReset: the conf-change entries that leave the survivor as the only voter (src/backup/cluster-reset.ts). */
import { describe, expect, it } from 'vitest';
import { decodeConfChange, encodeConfChange } from '../../src/raft/conf.js';
import { EntryType, type ConfChange, type Entry } from '../../src/raft/types.js';
import { planClusterReset } from '../../src/backup/cluster-reset.js';
import { decodeConfChangeContext, encodeConfChangeContext, encodeRequest } from '../../src/node/driver/raft-request.js';
import type { Member } from '../../src/node/server-api.js';

const member = (id: bigint, name = `m${id}`): Member => ({ id, name, peerUrls: [`http://127.0.0.1:${2380 + Number(id)}`], clientUrls: [], isLearner: false });

function conf(index: number, type: ConfChange['type'], id: bigint, term = 1): Entry {
  return { term, index, type: EntryType.ConfChange, data: encodeConfChange({ type, nodeId: id, context: encodeConfChangeContext({ id: 0n, member: member(id) }) }) };
}
function put(index: number, term: number): Entry {
  return { term, index, type: EntryType.Normal, data: encodeRequest({ id: BigInt(index), req: { kind: 'put', put: { key: new Uint8Array([index]), value: new Uint8Array(0) } } as never }) };
}
const noSnapshot = { index: 0, term: 0, confState: { voters: [], learners: [] } };
const changes = (entries: Entry[]): string[] => entries.map((e) => {
  const cc = decodeConfChange(e.data);
  return `${e.index}@${e.term} ${cc.type} ${cc.nodeId}`;
});

describe('planClusterReset', () => {
  it('removes every other voter and learner after the last entry, committed, in the current term', () => {
    const entries = [conf(1, 'addVoter', 1n), conf(2, 'addLearner', 2n), conf(3, 'addVoter', 2n, 2), conf(4, 'addLearner', 3n, 2), put(5, 3)];
    const plan = planClusterReset({ hardState: { term: 4, vote: 1n, commit: 5 }, snapshot: noSnapshot, entries }, member(1n))!;
    expect(changes(plan.entries)).toEqual(['6@4 removeNode 2', '7@4 removeNode 3']);
    expect(plan.hardState).toEqual({ term: 4, vote: 1n, commit: 7 });
    expect(plan.removed).toEqual([2n, 3n]);
    expect(plan.promotedSelf).toBe(false);
    // The apply path needs the member in every context: the one its add carried.
    expect(decodeConfChangeContext(decodeConfChange(plan.entries[0]!.data).context).member.name).toBe('m2');
  });

  it('keeps and commits the entries past the recorded commit index (they may have been acknowledged)', () => {
    const entries = [conf(1, 'addVoter', 1n), conf(2, 'addVoter', 2n), put(3, 1), put(4, 1), conf(5, 'addVoter', 3n)];
    const plan = planClusterReset({ hardState: { term: 2, vote: 0n, commit: 3 }, snapshot: noSnapshot, entries }, member(2n))!;
    expect(plan.adopted).toBe(2);
    // Member 3's add was in the tail: it is removed too.
    expect(changes(plan.entries)).toEqual(['6@2 removeNode 1', '7@2 removeNode 3']);
    expect(plan.hardState.commit).toBe(7);
  });

  it('starts from the snapshot configuration when the log was compacted', () => {
    const snapshot = { index: 100, term: 3, confState: { voters: [1n, 2n, 3n], learners: [4n] } };
    const plan = planClusterReset({ hardState: { term: 3, vote: 0n, commit: 100 }, snapshot, entries: [] }, member(3n))!;
    expect(changes(plan.entries)).toEqual(['101@3 removeNode 1', '102@3 removeNode 2', '103@3 removeNode 4']);
  });

  it('makes a surviving learner the voter', () => {
    const entries = [conf(1, 'addVoter', 1n), conf(2, 'addLearner', 2n)];
    const plan = planClusterReset({ hardState: { term: 1, vote: 0n, commit: 2 }, snapshot: noSnapshot, entries }, member(2n))!;
    expect(changes(plan.entries)).toEqual(['3@1 removeNode 1', '4@1 addVoter 2']);
    expect(plan.promotedSelf).toBe(true);
  });

  it('changes nothing when the member already is the only voter (leaving the flag on is harmless)', () => {
    const entries = [conf(1, 'addVoter', 1n), conf(2, 'addVoter', 2n), conf(3, 'removeNode', 2n), put(4, 1)];
    expect(planClusterReset({ hardState: { term: 1, vote: 1n, commit: 4 }, snapshot: noSnapshot, entries }, member(1n))).toBeUndefined();
  });
});
