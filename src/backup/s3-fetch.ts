/**
 * Restore from the bucket (k3s: "if the snapshot is stored on S3, the file is downloaded into the snapshot
 * directory"): `snapshot restore s3://bucket/folder/name` and `--cluster-reset-restore-path name` with the
 * --etcd-s3 flags download the object (its upload's SHA-256 checked, s3-store.ts), gunzip it when its name
 * ends in .gz, and hand the plain etcd file to the restore, which checks etcd's own hash.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { S3Options } from '../config/s3-options.js';
import { compressedSuffix, partialSuffix } from './snapshot-dir.js';
import { parseS3Url, S3Error } from './s3-store.js';

/** Downloads snapshot `name` of the bucket into `dir`; resolves with the path of the plain (uncompressed) file. */
export async function fetchFromBucket(s3: S3Options, name: string, dir: string): Promise<{ path: string; downloaded: string }> {
  const { S3Store } = await import('./s3-store.js');
  const store = await S3Store.open(s3);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const downloaded = join(dir, name);
  await store.download(name, downloaded);
  if (!name.endsWith(compressedSuffix)) return { path: downloaded, downloaded };
  const plain = join(dir, `${name.slice(0, -compressedSuffix.length)}${partialSuffix}`);
  try {
    await pipeline(createReadStream(downloaded), createGunzip(), createWriteStream(plain, { mode: 0o600 }));
  } catch (error) {
    await rm(plain, { force: true });
    throw error;
  }
  return { path: plain, downloaded };
}

/** `s3://bucket/folder/name` with the other --etcd-s3-* options: the options naming that bucket and folder. */
export function s3OptionsForUrl(url: string, base: (flag: string) => string | undefined): { get: (flag: string) => string | undefined; name: string } {
  const parts = parseS3Url(url);
  if (parts === undefined) throw new S3Error(`${url}: expected s3://bucket/folder/name`);
  const fixed: Record<string, string> = { 'etcd-s3': 'true', 'etcd-s3-bucket': parts.bucket, 'etcd-s3-folder': parts.folder };
  return { get: (flag) => fixed[flag] ?? base(flag), name: parts.name };
}
