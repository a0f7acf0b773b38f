/**
 * OffsiteUploads (offsite-uploads.ts) on the real clock, timers and bucket (s3-store.ts, whose client is
 * imported at the first upload), with the check each file passes before it leaves the board.
 */
import { createReadStream } from 'node:fs';
import { createHash } from 'node:crypto';
import { createGunzip } from 'node:zlib';
import type { Logger } from '../config/log.js';
import type { S3Options } from '../config/s3-options.js';
import type { Registry } from '../metrics/metrics.js';
import { verifySnapshotHash } from '../etcd-db/etcd-db-file.js';
import { RestoreError } from './import.js';
import { OffsiteUploads } from './offsite-uploads.js';
import { compressedSuffix } from './snapshot-dir.js';

export interface OffsiteInput {
  s3: S3Options;
  nodeName: string;
  retention: number;
  registry: Registry;
  logger: Logger;
}

export function createOffsiteUploads(input: OffsiteInput): OffsiteUploads {
  const { s3 } = input;
  return new OffsiteUploads({
    bucketUrl: `s3://${s3.bucket}${s3.folder === '' ? '' : `/${s3.folder}`}`,
    open: async () => (await import('./s3-store.js')).S3Store.open(s3),
    verify: verifyLocalSnapshot,
    nodeName: input.nodeName,
    retention: input.retention,
    now: () => Date.now(),
    timers: {
      setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
      clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
    },
    logger: input.logger.child({ component: 's3' }),
    registry: input.registry,
  });
}

const sha256Bytes = 32;

/** etcd's check of a snapshot file (pages then their SHA-256), through gunzip for a .gz one. */
export async function verifyLocalSnapshot(path: string): Promise<void> {
  if (!path.endsWith(compressedSuffix)) {
    if (!(await verifySnapshotHash(path))) throw new RestoreError(`${path}: no SHA-256 trailer: not a complete etcd snapshot`);
    return;
  }
  // Streamed: every byte but the last 32 is hashed; the last 32 must be that hash.
  const hash = createHash('sha256');
  let tail = Buffer.alloc(0);
  for await (const chunk of createReadStream(path).pipe(createGunzip())) {
    const all = Buffer.concat([tail, chunk as Buffer]);
    const keep = Math.min(sha256Bytes, all.length);
    hash.update(all.subarray(0, all.length - keep));
    tail = Buffer.from(all.subarray(all.length - keep));
  }
  if (tail.length < sha256Bytes || !hash.digest().equals(tail)) throw new RestoreError(`${path}: the SHA-256 trailer does not match its contents`);
}
