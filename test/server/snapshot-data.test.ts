/**
 * Received snapshots on disk: a leader may send the same snapshot again while the first send is still
 * arriving (a retry on a slow or loaded link). Each receive writes a temp file of its own, so the file that
 * lands is always one whole stream, never two interleaved (which once failed a joiner's restore with
 * "invalid snapshot: unknown bucket").
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SnapshotDataDir, snapshotDataName } from '../../src/server/snapshot-data.js';
import { MessageType, type Message } from '../../src/raft/types.js';
import { removeDir, tempDir } from '../e2e/harness.js';

const meta = { index: 42, term: 3, confState: { voters: [1n], learners: [] } };
const message = { type: MessageType.Snap, from: 1n, to: 2n, term: 3, snapshot: { meta, data: new Uint8Array(0) } } as unknown as Message;

describe('SnapshotDataDir', () => {
  it('keeps concurrent receives of the same snapshot apart', async () => {
    const dir = tempDir('snapdata');
    try {
      const snaps = new SnapshotDataDir(dir);
      await snaps.init();
      const a = await snaps.open(message);
      const b = await snaps.open(message);
      const chunk = (fill: number): Uint8Array => new Uint8Array(1000).fill(fill);
      for (let i = 0; i < 5; i++) {
        await a.write(chunk(0xaa));
        await b.write(chunk(0xbb));
      }
      await a.commit();
      await b.commit();
      const landed = readFileSync(`${dir}/${snapshotDataName(meta)}`);
      expect(landed.length).toBe(5000);
      expect(new Set(landed).size).toBe(1);
    } finally {
      removeDir(dir);
    }
  });
});
