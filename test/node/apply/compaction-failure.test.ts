/**
 * A compaction's backend deletes finish after apply, and on a follower (or for the leader's auto-compaction)
 * nobody waits for them: a failed delete must reach the member's fatal path, as a failed flush does, never
 * be an unhandled rejection (issue 31, item 2).
 */
import { describe, expect, it } from 'vitest';
import type { Scheduler } from '../../../src/base/scheduler.js';
import { silentLogger } from '../../../src/config/log.js';
import type { BatchOp, WriteOptions } from '../../../src/mvcc/backend.js';
import { MemoryBackend } from '../../../src/mvcc/memory-backend.js';
import { EntryType, type Entry } from '../../../src/raft/types.js';
import { ApplyLoop, type ApplyHost } from '../../../src/node/apply/apply-loop.js';
import { ServerState } from '../../../src/node/apply/server-state.js';
import { encodeRequest, type RaftRequest } from '../../../src/node/driver/raft-request.js';
import { AppliedWait } from '../../../src/node/request/applied-wait.js';
import { putReq } from '../../mvcc/helpers.js';

/** Deletes fail once `failDeletes` is set (a disk error under the backend while compaction runs). */
class FailingDeletes extends MemoryBackend {
  failDeletes = false;
  override async write(ops: BatchOp[], options?: WriteOptions): Promise<void> {
    if (this.failDeletes && ops.some((op) => op.type === 'del')) throw new Error('EIO: backend delete failed');
    return super.write(ops, options);
  }
}

const none = { cancel: () => {} };
const scheduler: Scheduler = { nowMs: () => 0, wallMs: () => 0, after: () => none, every: () => none, soon: (fn) => queueMicrotask(fn) };
const entry = (index: number, req: RaftRequest): Entry => ({ index, term: 1, type: EntryType.Normal, data: encodeRequest({ id: BigInt(index), req }) });

describe('a compaction whose backend deletes fail', () => {
  it('on a member that did not propose it (a follower): reaches onFatal', async () => {
    const backend = new FailingDeletes();
    const state = await ServerState.load(backend, { quotaBackendBytes: 0, minLeaseTtlSeconds: 5 });
    let reportFatal!: (error: unknown) => void;
    const fatal = new Promise<unknown>((resolve) => (reportFatal = resolve));
    const appliedWait = new AppliedWait();
    const host = {
      memberId: 1n,
      parts: { scheduler, logger: silentLogger(), snapshotCount: 10_000, onFatal: (error: unknown) => reportFatal(error) },
      appliedWait,
      proposer: { applied: () => {} }, // nobody here waits for the compaction
      state: () => state,
      onApplied: () => {},
    } as unknown as ApplyHost;
    const apply = new ApplyLoop(host);
    apply.applyEntries([1, 2, 3].map((i) => entry(i, { kind: 'put', put: putReq('k', `v${i}`) })));
    apply.applyEntries([entry(4, { kind: 'compact', revision: 3, physical: false })]);
    backend.failDeletes = true;
    state.store.setDurableIndex(4);
    await state.store.flush(); // persists the schedule; the deletes start behind it and fail
    expect(String(await fatal)).toContain('EIO: backend delete failed');
  }, 2000);
});
