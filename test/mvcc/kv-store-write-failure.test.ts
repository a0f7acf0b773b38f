/**
 * A backend write that fails reaches whoever waits for it, never an unhandled rejection (issue 31, item 2):
 * flushDurable and exportSnapshot start a flush and used to drop its promise, so a failed flush was an
 * unhandled rejection while flushDurable went on to report its index as durable.
 */
import { describe, expect, it } from 'vitest';
import type { BatchOp, WriteOptions } from '../../src/mvcc/backend.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { putReq } from './helpers.js';

/** Fails every non-empty batch once `failing` is set (an EIO from the disk under LevelDB). */
class FailingBackend extends MemoryBackend {
  failing = false;
  override async write(ops: BatchOp[], options?: WriteOptions): Promise<void> {
    if (this.failing && ops.length > 0) throw new Error('EIO: backend write failed');
    return super.write(ops, options);
  }
}

async function storeWithUnflushedWrites(): Promise<{ backend: FailingBackend; st: KvStore }> {
  const backend = new FailingBackend();
  const st = await KvStore.open(backend);
  st.setDurableIndex(10);
  for (let i = 1; i <= 3; i++) {
    st.setConsistentIndex(i, 1);
    st.put(putReq(`k${i}`, `v${i}`));
  }
  backend.failing = true;
  return { backend, st };
}

describe('a failed backend write', () => {
  it('fails flushDurable: no index is reported durable that the backend lacks', async () => {
    const { backend, st } = await storeWithUnflushedWrites();
    await expect(st.flushDurable()).rejects.toThrow('EIO');
    expect(await KvStore.persistedIndex(backend)).toBe(0);
  });

  it('fails exportSnapshot: no export is taken without what was applied', async () => {
    const { st } = await storeWithUnflushedWrites();
    await expect(st.exportSnapshot()).rejects.toThrow('EIO');
  });
});
