/**
 * Off-site uploads (src/backup/offsite-uploads.ts) on a manual clock with a fake bucket: a snapshot is
 * verified then uploaded then the bucket pruned; a failure is counted, shown in the status, and tried again
 * after a doubling wait, a bounded number of times; a newer snapshot supersedes a waiting one; `enqueue`
 * never waits for the bucket.
 */
import { describe, expect, it } from 'vitest';
import { OffsiteUploads, retryDelayMs, type UploadTarget } from '../../src/backup/offsite-uploads.js';
import { s3UploadAttemptsMax } from '../../src/base/limits.js';
import { Registry } from '../../src/metrics/metrics.js';
import { ManualTime } from './manual-time.js';


async function fire(time: ManualTime): Promise<void> {
  time.fireNext();
  await settle();
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

class FakeBucket implements UploadTarget {
  failing = 0;
  uploads: string[] = [];
  prunes = 0;
  #gate: Promise<void> | undefined;
  #open: (() => void) | undefined;
  location(name: string): string {
    return `s3://b/f/${name}`;
  }
  hold(): void {
    this.#gate = new Promise((r) => (this.#open = r));
  }
  release(): void {
    this.#open?.();
    this.#gate = undefined;
  }
  async upload(path: string): Promise<{ sizeBytes: number }> {
    await this.#gate;
    if (this.failing > 0) {
      this.failing--;
      throw new Error('InvalidAccessKeyId: no such key');
    }
    this.uploads.push(path);
    return { sizeBytes: 1 };
  }
  async prune(): Promise<string[]> {
    this.prunes++;
    return [];
  }
}

function setup(bucket: FakeBucket, verify: (p: string) => Promise<void> = async () => {}) {
  const time = new ManualTime(1_700_000_000_000);
  const registry = new Registry();
  const logs: string[] = [];
  const log = (level: string) => (msg: string, f?: Record<string, unknown>) => logs.push(`${level} ${msg} ${JSON.stringify(f ?? {})}`);
  const u = new OffsiteUploads({
    bucketUrl: 's3://b/f', open: async () => bucket, verify, nodeName: 'n', retention: 2, now: () => time.nowMs, timers: time.timers,
    logger: { info: log('info'), warn: log('warn'), error: log('error') }, registry,
  });
  const metric = (result: string): number => Number(new RegExp(`^etcetera_snapshot_s3_upload_total\\{result="${result}"\\} (\\d+)`, 'm').exec(registry.expose())?.[1] ?? 0);
  return { time, u, logs, metric, registry };
}

describe('off-site uploads', () => {
  it('uploads a verified snapshot then prunes the bucket, and reports success', async () => {
    const bucket = new FakeBucket();
    const { u, metric } = setup(bucket);
    u.enqueue('/d/etcd-snapshot-n-1');
    expect(u.status().pending).toBe(true);
    await settle();
    expect(bucket.uploads).toEqual(['/d/etcd-snapshot-n-1']);
    expect(bucket.prunes).toBe(1);
    expect(metric('success')).toBe(1);
    expect(u.status()).toMatchObject({ bucket: 's3://b/f', failuresSinceSuccess: 0, lastError: null, pending: false });
    expect(u.status().lastSuccessAt).not.toBeNull();
  });

  it('never uploads a file that fails its local check', async () => {
    const bucket = new FakeBucket();
    const { u, metric } = setup(bucket, async () => {
      throw new Error('expected sha256 aa, got bb');
    });
    u.enqueue('/d/etcd-snapshot-n-1');
    await settle();
    expect(bucket.uploads).toEqual([]);
    expect(metric('failure')).toBe(1);
    expect(u.status().lastError).toContain('expected sha256');
  });

  it('retries a failed upload after a doubling wait, counting and logging each failure, then succeeds', async () => {
    const bucket = new FakeBucket();
    bucket.failing = 2;
    const { u, time, metric, logs } = setup(bucket);
    u.enqueue('/d/etcd-snapshot-n-1');
    await settle();
    expect(metric('failure')).toBe(1);
    expect(u.status()).toMatchObject({ failuresSinceSuccess: 1, pending: true, lastError: 'InvalidAccessKeyId: no such key' });
    expect(time.waitsMs).toEqual([retryDelayMs(0)]);
    await fire(time);
    expect(time.waitsMs).toEqual([retryDelayMs(1)]);
    expect(retryDelayMs(1)).toBe(2 * retryDelayMs(0));
    await fire(time);
    expect(bucket.uploads).toEqual(['/d/etcd-snapshot-n-1']);
    expect(metric('failure')).toBe(2);
    expect(metric('success')).toBe(1);
    expect(u.status()).toMatchObject({ failuresSinceSuccess: 0, lastError: null, pending: false });
    expect(logs.filter((l) => l.startsWith('error snapshot upload to s3 failed')).length).toBe(2);
  });

  it('gives up after s3UploadAttemptsMax tries of one snapshot', async () => {
    const bucket = new FakeBucket();
    bucket.failing = 100;
    const { u, time, metric } = setup(bucket);
    u.enqueue('/d/etcd-snapshot-n-1');
    await settle();
    while (time.pending > 0) await fire(time);
    expect(metric('failure')).toBe(s3UploadAttemptsMax);
    expect(u.status()).toMatchObject({ failuresSinceSuccess: s3UploadAttemptsMax, pending: false });
  });

  it('a newer snapshot replaces one waiting for its retry', async () => {
    const bucket = new FakeBucket();
    bucket.failing = 1;
    const { u, time } = setup(bucket);
    u.enqueue('/d/etcd-snapshot-n-1');
    await settle();
    u.enqueue('/d/etcd-snapshot-n-2');
    await settle();
    expect(bucket.uploads).toEqual([]); // waits for the timer: one upload at a time, no hammering
    await fire(time);
    expect(bucket.uploads).toEqual(['/d/etcd-snapshot-n-2']);
  });

  it('enqueue returns at once while the bucket hangs, and keeps only the newest waiting snapshot', async () => {
    const bucket = new FakeBucket();
    bucket.hold();
    const { u } = setup(bucket);
    u.enqueue('/d/etcd-snapshot-n-1');
    u.enqueue('/d/etcd-snapshot-n-2');
    u.enqueue('/d/etcd-snapshot-n-3');
    await settle();
    expect(bucket.uploads).toEqual([]);
    bucket.release();
    await settle();
    await settle();
    expect(bucket.uploads).toEqual(['/d/etcd-snapshot-n-1', '/d/etcd-snapshot-n-3']);
  });
});
