/**
 * Off-site snapshots (issue 36) against a real S3 server started here on 127.0.0.1 (s3rver, a devDependency):
 * scheduled snapshots uploaded with retention in the bucket, `snapshot ls|delete|prune` over local and bucket,
 * a bucket that fails (server stopped, wrong access key) while the member keeps serving and reports it (log,
 * metric, `etcetera status`), then a fresh member restored from the bucket with k3s's --cluster-reset
 * --cluster-reset-restore-path NAME and the S3 flags, which two members join, the original killed; and
 * `snapshot restore s3://bucket/folder/name`.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import S3rver from 's3rver';
import { afterAll, describe, expect, it } from 'vitest';
import type { Etcd3 } from 'etcd3';
import { clientOf, closeClients, freePort, killAll, runCli, sleep, startServer, tempDir, waitFor, type ServerProcess } from './harness.js';
import { joinThenKillRestored } from './restore-join.js';

const bucket = 'etcetera-backups';
const folder = 'board-1';
// s3rver's one account.
const accessKey = 'S3RVER';
const keyCount = 1000;
const prefix = 'offsite/';

/** s3rver on a fixed port and directory, so a stopped server can come back as the same bucket. */
class S3Server {
  readonly dir = tempDir('s3rver');
  port = 0;
  #server: S3rver | undefined;
  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    mkdirSync(this.dir, { recursive: true });
    this.#server = new S3rver({ address: '127.0.0.1', port: this.port, silent: true, directory: this.dir, configureBuckets: [{ name: bucket, configs: [] }] });
    await this.#server.run();
  }
  async stop(): Promise<void> {
    await this.#server?.close();
    this.#server = undefined;
  }
}

const s3 = new S3Server();
afterAll(async () => {
  closeClients();
  await killAll();
  await s3.stop();
}, 30_000);

function s3Flags(key = accessKey): string[] {
  return ['--etcd-s3', '--etcd-s3-endpoint', `127.0.0.1:${s3.port}`, '--etcd-s3-insecure', '--etcd-s3-access-key', key,
    '--etcd-s3-secret-key', 'S3RVER', '--etcd-s3-bucket', bucket, '--etcd-s3-folder', folder, '--etcd-s3-timeout', '5s'];
}

async function metric(sp: ServerProcess, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${sp.metricsPort}/metrics`)).text();
  return Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)`, 'm').exec(text)?.[1] ?? 0);
}
const uploads = (sp: ServerProcess, result: 'success' | 'failure'): Promise<number> => metric(sp, `etcetera_snapshot_s3_upload_total{result="${result}"}`);

async function fill(c: Etcd3): Promise<number> {
  for (let i = 0; i < keyCount; i += 200) {
    await Promise.all(Array.from({ length: 200 }, (_, j) => c.put(`${prefix}${String(i + j).padStart(5, '0')}`).value(`v${i + j}`)));
  }
  return Number((await c.kv.range({ key: Buffer.from(prefix) })).header.revision);
}

/** A put while the bucket fails: the member answers as usual. */
async function putQuickly(c: Etcd3, key: string): Promise<number> {
  const t0 = performance.now();
  await c.put(key).value('1');
  return performance.now() - t0;
}

const bucketNames = (ls: string, node: string): string[] =>
  [...ls.matchAll(new RegExp(`s3://${bucket}/${folder}/(etcd-snapshot-${node}-\\d+)`, 'g'))].map((m) => m[1]!);

describe('snapshots in an S3 bucket (k3s --etcd-s3)', () => {
  let lastName = '';
  let revision = 0;
  const token = 'offsite-token';

  it('uploads scheduled snapshots with retention in the bucket, survives a failing bucket, and the verbs manage both places', async () => {
    await s3.start();
    const up = await startServer({ name: 'up', args: ['--cluster-init', '--token', token, '--snapshot-schedule', '* * * * * *', '--snapshot-retention', '2', ...s3Flags()] });
    const c = clientOf(up);
    revision = await fill(c);
    const before = await uploads(up, 'success');
    await waitFor('three uploads after the writes', async () => ((await uploads(up, 'success')) >= before + 3 ? true : undefined), 30_000);
    expect(up.output.join('\n')).toContain('snapshot uploaded to s3');

    // The bucket stops answering: the member serves, logs, counts, and `etcetera status` says so.
    await s3.stop();
    const failed = await uploads(up, 'failure');
    await waitFor('a failed upload', async () => ((await uploads(up, 'failure')) > failed ? true : undefined), 20_000);
    expect(await putQuickly(c, 'while-down')).toBeLessThan(1_000);
    expect(up.output.join('\n')).toContain('snapshot upload to s3 failed');
    expect(await metric(up, 'etcetera_snapshot_s3_last_failure_timestamp_seconds')).toBeGreaterThan(Date.now() / 1000 - 60);
    const status = await runCli(['status', '--endpoints', up.clientUrl]);
    expect(status.stdout).toMatch(/S3 UPLOAD/);
    expect(status.stdout).toMatch(/failing \(\d+\)/);
    expect(status.stdout).toContain(`uploads to s3://${bucket}/${folder} failing since`);

    // Back: uploads resume (the retry, or the next snapshot).
    await s3.start();
    const resumed = await uploads(up, 'success');
    await waitFor('uploads again', async () => ((await uploads(up, 'success')) > resumed ? true : undefined), 30_000);
    // An on-demand snapshot (etcdctl's save) goes to the bucket too.
    const onDemand = join(tempDir('on-demand'), 'on-demand-up.db');
    const save = await runCli(['snapshot', 'save', onDemand, '--endpoints', up.clientUrl, ...s3Flags()]);
    expect(save.stdout).toContain(`Snapshot uploaded to s3://${bucket}/${folder}/on-demand-up.db`);
    await up.kill('SIGTERM');

    // ls: the bucket's and the local snapshots, with size and location.
    const ls = await runCli(['snapshot', 'ls', '--data-dir', up.dataDir, ...s3Flags()]);
    expect(ls.code).toBe(0);
    expect(ls.stdout.split('\n')[0]).toMatch(/^Name\s+Location\s+Size\s+Created$/);
    const inBucket = bucketNames(ls.stdout, 'up');
    expect(inBucket.length).toBe(2); // retention 2, in the bucket too
    expect(ls.stdout).toMatch(new RegExp(`${inBucket[0]} +s3://${bucket}/${folder}/${inBucket[0]} +\\d{4,} `));
    expect(ls.stdout).toContain(`file://${join(up.dataDir, 'snapshots', inBucket[1]!)}`);
    expect(ls.stdout).toContain(`s3://${bucket}/${folder}/on-demand-up.db`);

    // delete removes from both places; prune (k3s's --s3-* spellings) keeps the newest in the bucket.
    const del = await runCli(['snapshot', 'delete', inBucket[0]!, '--data-dir', up.dataDir, ...s3Flags()]);
    expect(del.code).toBe(0);
    expect(del.stdout).toContain(`Removing snapshot s3://${bucket}/${folder}/${inBucket[0]}`);
    const after = await runCli(['snapshot', 'ls', '--data-dir', up.dataDir, ...s3Flags()]);
    expect(bucketNames(after.stdout, 'up')).toEqual([inBucket[1]]);
    const pruned = await runCli(['etcd-snapshot', 'prune', '--data-dir', up.dataDir, '--name', 'up', '--snapshot-retention', '1',
      '--s3', '--s3-endpoint', `127.0.0.1:${s3.port}`, '--s3-insecure', '--s3-access-key', accessKey, '--s3-secret-key', 'S3RVER', '--s3-bucket', bucket, '--s3-folder', folder]);
    expect(pruned.code).toBe(0);
    expect(bucketNames((await runCli(['snapshot', 'ls', '--data-dir', up.dataDir, ...s3Flags()])).stdout, 'up')).toEqual([inBucket[1]]);
    lastName = inBucket[1]!;
  }, 90_000);

  it('reports a wrong access key and keeps serving', async () => {
    const wrong = await startServer({ name: 'wrongkey', args: ['--snapshot-schedule', '* * * * * *', ...s3Flags('NOT-A-KEY')] });
    await waitFor('a refused upload', async () => ((await uploads(wrong, 'failure')) > 0 ? true : undefined), 20_000);
    expect(await putQuickly(clientOf(wrong), 'still-here')).toBeLessThan(1_000);
    // s3rver's answer to an unknown key (AWS answers InvalidAccessKeyId).
    expect(wrong.output.join('\n')).toContain('AccessDenied: Valid and authorized credentials required');
    const status = await runCli(['status', '--endpoints', wrong.clientUrl]);
    expect(status.stdout).toContain('AccessDenied');
    await wrong.kill('SIGKILL');
  }, 30_000);

  it('restores a fresh member from the bucket (--cluster-reset-restore-path NAME), which two members join', async () => {
    expect(lastName).not.toBe('');
    const dataDir = tempDir('from-bucket');
    const peerPort = await freePort();
    const clientPort = await freePort();
    const reset = await startServer({
      name: 'fresh', dataDir, clientPort, peerPort, waitReady: false,
      args: ['--cluster-reset', '--cluster-reset-restore-path', lastName, '--token', token, ...s3Flags()],
    });
    expect(await Promise.race([reset.exited, sleep(30_000).then(() => 'still running')])).toBe(0);
    expect(reset.output.join('\n')).toContain('downloaded the snapshot from s3');
    const r = await startServer({ name: 'fresh', dataDir, clientPort, peerPort });
    await joinThenKillRestored(r, token, revision, prefix, keyCount);
  }, 120_000);

  it('snapshot restore s3://bucket/folder/name', async () => {
    const work = tempDir('restore-s3');
    const peerPort = await freePort();
    const url = `http://127.0.0.1:${peerPort}`;
    const out = await runCli(['snapshot', 'restore', `s3://${bucket}/${folder}/${lastName}`, '--data-dir', join(work, 'd'), '--name', 'rs',
      '--initial-cluster', `rs=${url}`, '--initial-advertise-peer-urls', url, ...s3Flags().filter((f) => f !== '--etcd-s3')]);
    expect(out.stderr).toContain(`downloaded s3://${bucket}/${folder}/${lastName}`);
    expect(out.code).toBe(0);
    // The restore's own count: every revision of the backup (the fill's puts, one per key, and the put made
    // while the bucket was down) is in the new member.
    const m = /restored snapshot: revision (\d+), (\d+) revisions/.exec(out.stdout);
    expect(Number(m?.[1])).toBe(revision + 1);
    expect(Number(m?.[2])).toBe(keyCount + 1);
  }, 30_000);
});
