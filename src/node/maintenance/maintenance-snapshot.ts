/**
 * Maintenance.Snapshot's data: an etcd snapshot of a consistent backend view, built into a temp file beside
 * the member's data (so the backend view is released as soon as the file is written, not after a slow
 * client has read it all), then streamed in chunks and deleted. The gRPC layer appends the SHA-256, as
 * etcd does, so `etcdctl snapshot save` accepts the stream and `snapshot status/restore` read the file.
 * A temp file left by a crash ends in `.tmp` and is removed at the next start (src/storage/snapshot-data.ts).
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { SnapshotSource } from '../api-types.js';
import type { SnapshotExporter } from '../../etcd-db/export.js';

const readChunkBytes = 256 * 1024;

export async function maintenanceSnapshot(store: SnapshotExporter, tempDir: string, serverVersion: string): Promise<SnapshotSource> {
  const path = join(tempDir, `maintenance-${randomBytes(6).toString('hex')}.db.tmp`);
  // The etcd file writer (etcd-db, bbolt) loads at the first snapshot: a member at rest never runs it (issue 34).
  const { writeEtcdSnapshot } = await import('../../etcd-db/export.js');
  const exported = await store.exportSnapshot();
  let dbBytes: number;
  try {
    dbBytes = (await writeEtcdSnapshot(exported.view, path, { trailer: false, serverVersion })).dbBytes;
  } catch (err) {
    await rm(path, { force: true });
    throw err;
  } finally {
    await exported.view.close();
  }
  return {
    sizeBytes: dbBytes,
    chunks: (async function* () {
      try {
        for await (const chunk of createReadStream(path, { highWaterMark: readChunkBytes })) yield chunk as Uint8Array;
      } finally {
        await rm(path, { force: true });
      }
    })(),
  };
}
