/**
 * HashKV reads values from the backend in batches and lets the event loop turn between them: on a large store
 * it must never block apply, reads or heartbeats (a 5-minute corruption check over 650,000 revisions once
 * stalled a member for minutes). Unflushed writes are hashed as if flushed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { LevelBackend } from '../../src/storage/level-backend.js';
import { putReq } from './helpers.js';

describe('HashKV on a LevelDB store', () => {
  it('yields to the event loop while it reads, and counts unflushed writes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hash-stream-'));
    const backend = await LevelBackend.open(join(dir, 'db'));
    try {
      const store = await KvStore.open(backend);
      for (let i = 0; i < 5_000; i++) store.put(putReq(`k/${i}`, `value ${i}`));
      await store.flush();
      for (let i = 0; i < 100; i++) store.put(putReq(`late/${i}`, `unflushed ${i}`));
      let turns = 0;
      const ticker = setInterval(() => turns++, 0);
      const withUnflushed = await store.hashKV(0);
      clearInterval(ticker);
      expect(turns).toBeGreaterThan(1);
      await store.flush();
      expect(await store.hashKV(0)).toEqual(withUnflushed);
      await store.idle();
    } finally {
      await backend.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
