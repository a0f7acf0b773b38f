/**
 * The files the member and the backup tools keep are written whole, through wal/atomic-file.ts: renamed into
 * place after an fsync, and the directory fsynced after the rename (issue 31, item 6). Before, a fetched or
 * exported snapshot was renamed without a directory fsync, and a restored token written without any fsync.
 * What each call site does is seen through NodeFsPort, the one adapter the helper writes with.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fetchSnapshot } from '../../src/backup/fetch-snapshot.js';
import { importRevisions } from '../../src/backup/import.js';
import { silentLogger } from '../../src/config/log.js';
import { KvStore } from '../../src/mvcc/kv-store.js';
import { MemoryBackend } from '../../src/mvcc/memory-backend.js';
import { saveIndexCheckpoint } from '../../src/storage/index-checkpoint-file.js';
import { saveSnapshotFile } from '../../src/etcd-db/export.js';
import { SnapshotDataDir } from '../../src/storage/snapshot-data.js';
import { StateStreamEncoder } from '../../src/mvcc/state-stream.js';
import { MessageType, type Message } from '../../src/raft/types.js';
import { NodeFsPort } from '../../src/wal/fs-port.js';
import { startHarness } from '../api/grpc/harness.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
async function temp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'etcetera-durable-'));
  dirs.push(d);
  return d;
}

/** The renames and directory syncs NodeFsPort did, in order. */
let events: string[] = [];
beforeEach(() => {
  events = [];
  const rename = NodeFsPort.prototype.rename;
  const syncDir = NodeFsPort.prototype.syncDir;
  vi.spyOn(NodeFsPort.prototype, 'rename').mockImplementation(function (this: NodeFsPort, from, to) {
    events.push(`rename ${from} -> ${to}`);
    return rename.call(this, from, to);
  });
  vi.spyOn(NodeFsPort.prototype, 'syncDir').mockImplementation(function (this: NodeFsPort, dir) {
    events.push(`syncDir ${dir}`);
    return syncDir.call(this, dir);
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** `path` got its name by a rename, and its directory was fsynced after that. */
function expectPublished(path: string): void {
  const renamed = events.findIndex((e) => e.startsWith('rename ') && e.endsWith(` -> ${path}`));
  expect(renamed, `${path} renamed into place; saw ${JSON.stringify(events)}`).toBeGreaterThanOrEqual(0);
  const synced = events.indexOf(`syncDir ${path.slice(0, path.lastIndexOf('/'))}`, renamed);
  expect(synced, `the directory of ${path} fsynced after its rename; saw ${JSON.stringify(events)}`).toBeGreaterThan(renamed);
}

const cluster = { name: 'a', initialCluster: [{ name: 'a', peerUrls: ['http://10.0.0.1:2380'] }], clusterToken: 'tok' };

describe('durable files', () => {
  it('restore: the token and the identity', async () => {
    const dataDir = await temp();
    await importRevisions(dataDir, [], { cluster });
    expect(await readFile(join(dataDir, 'token'), 'utf8')).toBe('tok\n');
    expectPublished(join(dataDir, 'token'));
    expectPublished(join(dataDir, 'member.restoring', 'identity'));
  });

  it('snapshot save (in process): the exported file', async () => {
    const dir = await temp();
    const store = await KvStore.open(new MemoryBackend());
    await saveSnapshotFile(store, join(dir, 'snap.db'));
    expectPublished(join(dir, 'snap.db'));
  });

  it('snapshot save (from an endpoint): the fetched file', async () => {
    const h = await startHarness();
    try {
      h.api.snapshotBytes = new Uint8Array(4096).map((_, i) => i % 251); // the server appends the SHA-256
      const dir = await temp();
      expect(await fetchSnapshot(h.url, join(dir, 'snap.db'))).toEqual({ sizeBytes: 4096 + 32 });
      expectPublished(join(dir, 'snap.db'));
    } finally {
      await h.close();
    }
  });

  it('the key index checkpoint', async () => {
    const dir = await temp();
    const store = await KvStore.open(new MemoryBackend());
    await saveIndexCheckpoint(dir, store, silentLogger());
    expectPublished(join(dir, 'index.ckpt'));
  });

  it('a snapshot received from the leader', async () => {
    const dir = await temp();
    const snaps = new SnapshotDataDir(dir);
    await snaps.init();
    const meta = { index: 42, term: 3, confState: { voters: [1n], learners: [] } };
    const file = await snaps.open({ type: MessageType.Snap, snapshot: { meta, data: new Uint8Array(0) } } as unknown as Message);
    const encoder = new StateStreamEncoder();
    for (const chunk of [encoder.add('key', new Uint8Array([1]), new Uint8Array([2])), ...encoder.finish()]) if (chunk !== undefined) await file.write(chunk);
    await file.commit();
    expectPublished(join(dir, '0000000000000003-000000000000002a.snap.db'));
  });
});
