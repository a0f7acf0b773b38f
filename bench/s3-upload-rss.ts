/**
 * Issue 36: a member's RSS while it uploads a 200,000-key snapshot to an S3 bucket (s3rver on 127.0.0.1, in
 * this process). Expected: the upload raises the member's RSS by less than 20 MB, whatever the snapshot's
 * size: the client (minio, bundled) is ~7 MB loaded, and the file goes in 5 MiB parts read into one buffer
 * (src/backup/s3-store.ts). The snapshot itself (the export before the upload) is measured apart.
 *
 * The data set is written by the production restore path (importRevisions, as `snapshot restore`): `--keys`
 * keys of `--value-bytes` bytes each. The member takes one scheduled snapshot (cron at the next `--at-second`
 * mark) and uploads it; /proc/<pid>/status is sampled every 20 ms.
 *
 * Measured (AMD EPYC, 2 vCPUs shared, 2026-12-06, two runs): a 55 MB snapshot in 11 parts, 6.2-6.3 s; the
 * upload's rise RSS +12.0 / +7.9 MB (RssAnon +11.9 / +7.8 MB); the export before it +28 / +37 MB.
 *
 *   npm run build && npx tsx bench/s3-upload-rss.ts [--keys 200000] [--value-bytes 200]
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { importRevisions } from '../src/backup/import.js';
import type { RevisionRecord } from '../src/backup/revision-record.js';
import { freePort, killAll, startServer, type ServerProcess } from '../test/e2e/harness.js';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
}
const keys = option('--keys', 200_000);
const valueBytes = option('--value-bytes', 200);

function* records(): Iterable<RevisionRecord> {
  const value = new Uint8Array(valueBytes).fill(0x61);
  for (let i = 0; i < keys; i++) {
    yield { key: new TextEncoder().encode(`bench/${String(i).padStart(8, '0')}`), value, createRevision: i + 2, modRevision: i + 2, version: 1, lease: 0n, tombstone: false };
  }
}

function rss(pid: number): { rssKb: number; anonKb: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rssKb: Number(/VmRSS:\s+(\d+)/.exec(text)![1]), anonKb: Number(/RssAnon:\s+(\d+)/.exec(text)![1]) };
}

const dir = await mkdtemp(join(tmpdir(), 'etcetera-s3-rss-'));
const s3dir = join(dir, 's3');
const port = await freePort();
const s3 = new S3rver({ address: '127.0.0.1', port, silent: true, directory: s3dir, configureBuckets: [{ name: 'bench', configs: [] }] });
await s3.run();
let member: ServerProcess | undefined;
try {
  const peerPort = await freePort();
  const dataDir = join(dir, 'm');
  const t0 = Date.now();
  const r = await importRevisions(dataDir, records(), {
    cluster: { name: 'rss', initialCluster: [{ name: 'rss', peerUrls: [`http://127.0.0.1:${peerPort}`] }], clusterToken: 'rss', initialAdvertisePeerUrls: [`http://127.0.0.1:${peerPort}`] },
  });
  console.log(`imported ${r.records} keys in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  // One snapshot, 20 s after start (when the member has settled): cron on that second of the minute.
  const at = new Date(Date.now() + 20_000);
  member = await startServer({
    name: 'rss', dataDir, peerPort,
    args: ['--snapshot-schedule', `${at.getSeconds()} ${at.getMinutes()} * * * *`, '--etcd-s3', '--etcd-s3-endpoint', `127.0.0.1:${port}`, '--etcd-s3-insecure',
      '--etcd-s3-access-key', 'S3RVER', '--etcd-s3-secret-key', 'S3RVER', '--etcd-s3-bucket', 'bench'],
  });
  const pid = member.proc.pid!;
  const samples: Array<{ t: number; rssKb: number; anonKb: number }> = [];
  const timer = setInterval(() => samples.push({ t: Date.now(), ...rss(pid) }), 20);
  const logAt = (msg: string): number | undefined => {
    const line = member!.output.find((l) => l.includes(`"msg":"${msg}"`));
    return line === undefined ? undefined : Date.parse((JSON.parse(line) as { ts: string }).ts);
  };
  const deadline = Date.now() + 180_000;
  while (logAt('snapshot uploaded to s3') === undefined && logAt('snapshot upload to s3 failed') === undefined && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
  await new Promise((res) => setTimeout(res, 500));
  clearInterval(timer);
  const saved = logAt('scheduled snapshot saved');
  const uploaded = logAt('snapshot uploaded to s3');
  if (saved === undefined || uploaded === undefined) throw new Error(`no upload: ${member.output.slice(-5).join('\n')}`);
  const sizeLine = member.output.find((l) => l.includes('"msg":"scheduled snapshot saved"'))!;
  const before = samples.filter((s) => s.t < at.getTime() - 500).at(-1)!;
  const atSaved = samples.filter((s) => s.t <= saved).at(-1)!;
  const during = samples.filter((s) => s.t >= saved && s.t <= uploaded);
  const peak = during.reduce((m, s) => (s.rssKb > m.rssKb ? s : m), atSaved);
  const peakAnon = during.reduce((m, s) => Math.max(m, s.anonKb), atSaved.anonKb);
  const mb = (kb: number): string => (kb / 1024).toFixed(1);
  console.log(`snapshot: ${(JSON.parse(sizeLine) as { sizeBytes: number }).sizeBytes} bytes; upload ${((uploaded - saved) / 1000).toFixed(1)} s`);
  console.log(`member RSS before the snapshot ${mb(before.rssKb)} MB, after saving it ${mb(atSaved.rssKb)} MB, peak while uploading ${mb(peak.rssKb)} MB`);
  console.log(`upload's rise: RSS +${mb(peak.rssKb - atSaved.rssKb)} MB, RssAnon +${mb(peakAnon - atSaved.anonKb)} MB (limit 20 MB); snapshot+upload over the start: RSS +${mb(peak.rssKb - before.rssKb)} MB`);
} finally {
  await killAll();
  await s3.close();
  await rm(dir, { recursive: true, force: true });
}
