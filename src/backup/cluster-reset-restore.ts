/**
 * k3s's `--cluster-reset --cluster-reset-restore-path FILE`: before the member starts, the snapshot file (an
 * etcd-format snapshot, ours or etcd's, gzipped or not) becomes the data directory's member; the member that
 * was there is kept beside it as `member-old-<unix seconds>` (k3s keeps the old db the same way). The
 * restored member is the only member of a new cluster; the reset that follows changes nothing more, and the
 * process exits as after any --cluster-reset.
 *
 * With --etcd-s3 (k3s's rule), the path is the snapshot's name in the bucket: it is downloaded into the
 * snapshot directory first, its upload's SHA-256 checked (s3-fetch.ts), then restored as a local file.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { compressedSuffix, partialSuffix } from './snapshot-dir.js';
import { restoreSnapshotFile } from './snapshot-restore.js';
import type { Logger } from '../config/log.js';
import type { S3Options } from '../config/s3-options.js';
import { walDirInsideMember } from '../storage/wal-dir.js';

export interface ResetRestoreInput {
  dataDir: string;
  name: string;
  initialAdvertisePeerUrls: string[];
  path: string;
  logger: Logger;
  /** The join token (--token): the restored member keeps it, so the members that rejoin need no other. */
  token?: string;
  /** Wall-clock seconds for the name of the directory kept aside. */
  nowSeconds: number;
  /** --wal-dir: the restored log goes there; an old log outside the member directory is kept aside too. */
  walDir?: string;
  /** --etcd-s3: `path` names a snapshot in this bucket, downloaded into `snapshotDir`. */
  s3?: S3Options;
  snapshotDir?: string;
}

export async function restoreForClusterReset(o: ResetRestoreInput): Promise<void> {
  if (o.s3 !== undefined) {
    if (o.path.includes('/')) throw new Error(`with --etcd-s3, --cluster-reset-restore-path names a snapshot in the bucket, not a path (${o.path}); --etcd-s3=false restores a local file`);
    const { fetchFromBucket } = await import('./s3-fetch.js');
    const { path, downloaded } = await fetchFromBucket(o.s3, o.path, o.snapshotDir ?? join(o.dataDir, 'snapshots'));
    o.logger.info('cluster reset: downloaded the snapshot from s3', { name: o.path, bucket: o.s3.bucket, folder: o.s3.folder, path: downloaded });
    try {
      return await restoreForClusterReset({ ...o, path, s3: undefined });
    } finally {
      if (path !== downloaded) await rm(path, { force: true });
    }
  }
  const memberDir = join(o.dataDir, 'member');
  await stat(o.path); // a missing file is refused before anything moves
  let file = o.path;
  if (o.path.endsWith(compressedSuffix)) {
    file = join(o.dataDir, `cluster-reset-restore-${o.nowSeconds}.db${partialSuffix}`);
    await pipeline(createReadStream(o.path), createGunzip(), createWriteStream(file, { mode: 0o600 }));
  }
  try {
    if (await stat(memberDir).then(() => true, () => false)) {
      const aside = join(o.dataDir, `member-old-${o.nowSeconds}`);
      await rename(memberDir, aside);
      o.logger.warn('cluster reset: the current member data is kept aside', { dir: aside });
    }
    await keepOutsideLogAside(o);
    const peerUrls = o.initialAdvertisePeerUrls;
    // The restore derives the new ids from the cluster token and keeps it as the join token unless the data
    // directory already has one: the cluster's token either way.
    const stored = await readFile(join(o.dataDir, 'token'), 'utf8').then((t) => t.trim(), () => '');
    const clusterToken = o.token ?? (stored !== '' ? stored : 'etcd-cluster');
    const r = await restoreSnapshotFile(file, o.dataDir, {
      cluster: { name: o.name, initialCluster: [{ name: o.name, peerUrls }], clusterToken, initialAdvertisePeerUrls: peerUrls },
      ...(o.walDir !== undefined ? { walDir: o.walDir } : {}),
    });
    o.logger.info('cluster reset: restored the snapshot', { path: o.path, revision: r.revision, records: r.records, leases: r.leases, member: r.memberId.toString(16) });
  } finally {
    if (file !== o.path) await rm(file, { force: true });
  }
}

/** A --wal-dir outside the member directory did not move with it: its old log is kept aside beside it. */
async function keepOutsideLogAside(o: ResetRestoreInput): Promise<void> {
  if (o.walDir === undefined || walDirInsideMember(o.dataDir, o.walDir)) return;
  if (!(await stat(o.walDir).then(() => true, () => false))) return;
  const aside = `${o.walDir.replace(/\/+$/, '')}-old-${o.nowSeconds}`;
  await rename(o.walDir, aside);
  o.logger.warn('cluster reset: the current log (--wal-dir) is kept aside', { dir: aside });
}
