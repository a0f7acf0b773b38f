/**
 * `etcetera snapshot save|status|restore` and `etcetera migrate --from-etcd`, with etcdctl's flag names and
 * output, so scripts written for etcdctl work with either tool:
 *
 *   etcetera snapshot save FILE [--endpoints 127.0.0.1:2379] [--cacert F --cert F --key F]
 *   etcetera snapshot status FILE [-w table|json]
 *   etcetera snapshot restore FILE --data-dir D [--name N --initial-cluster C --initial-cluster-token T
 *            --initial-advertise-peer-urls U --skip-hash-check]
 *   etcetera migrate --from-etcd URL --data-dir D [the restore flags]
 *
 * Returns the exit code; messages go to the given streams (the CLI passes process.stdout/stderr).
 */
import { mkdir, rm } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { BboltFormatError } from '../bbolt/format.js';
import { ConfigError } from '../config/config.js';
import { parseInitialCluster } from '../config/config-validate.js';
import { fetchSnapshot, type EndpointTls, type EndpointUser } from './fetch-snapshot.js';
import { RestoreError, type ImportResult, type RestoreCluster } from './import.js';
import { humanBytes, Progress, type ProgressOutput } from './progress.js';
import { textTable } from '../base/text-table.js';
import { snapshotStatus } from '../etcd-db/etcd-db-file.js';
import { restoreSnapshotFile } from './snapshot-restore.js';
import { migrateFromKine } from './kine-migrate.js';
import { S3Error } from './s3-store.js';
import { s3BoolFlags, s3FlagOf, s3OptionsOf, S3OptionError, type S3Options } from '../config/s3-options.js';

export interface CliStreams {
  stdout: ProgressOutput;
  stderr: ProgressOutput;
}

/** Each verb's own usage (`etcetera snapshot restore --help` prints only its own; main/cli-commands.ts). */
export const snapshotSaveUsage = `Usage:
  etcetera snapshot save FILE [--endpoints HOST:PORT] [--cacert F] [--cert F] [--key F] [--insecure-skip-tls-verify]
           [--user NAME[:PASSWORD]] [--password P]     (etcdctl's ETCDCTL_* environment works too)

Saves a running member's snapshot (Maintenance.Snapshot) to FILE, in etcd's format: etcdctl reads it.
With --etcd-s3 and the --etcd-s3-* flags (k3s's), the saved file is also uploaded to the bucket.
`;

export const snapshotStatusUsage = `Usage:
  etcetera snapshot status FILE [-w table|json]

Prints a snapshot file's hash, revision, total keys and total size (etcdctl's fields), offline.
`;

export const snapshotRestoreUsage = `Usage:
  etcetera snapshot restore FILE --data-dir DIR [--name NAME] [--initial-cluster NAME=URL,...]
           [--initial-cluster-token TOKEN] [--initial-advertise-peer-urls URL,...] [--wal-dir DIR] [--skip-hash-check]
  etcetera snapshot restore s3://BUCKET/FOLDER/NAME --data-dir DIR [the restore flags] [--etcd-s3-* flags]

Restores a snapshot file (ours or etcd's) into a new data directory, with etcdctl's flags and defaults
(--name default, --initial-cluster-token etcd-cluster, peer URL http://127.0.0.1:2380), and prints the
command that starts it. The token is the restored cluster's join token: etcd's public default opens no joins
until a start gives --token (see the README, "Backup and restore"). An s3:// source is fetched with the
--etcd-s3-* flags and its hash checked first (README, "Backups off the board").
`;

export const migrateUsage = `Usage:
  etcetera migrate --from-etcd URL --data-dir DIR [the restore flags]
  etcetera migrate --from-kine state.db --data-dir DIR [the restore flags]

Builds a new member's data directory from a live etcd's snapshot (verified, then restored) or from kine's
SQLite database. The restore flags are those of \`etcetera snapshot restore --help\`.
`;

const snapshotUsage = `Usage:
${[snapshotSaveUsage, snapshotStatusUsage, snapshotRestoreUsage, migrateUsage].map((u) => u.split('\n\n')[0]!.replace('Usage:\n', '')).join('\n')}

Snapshot files are etcd's own format (bbolt database + SHA-256): etcdctl reads ours and we read etcd's.
`;

const valueFlags = new Set([
  'endpoints', 'cacert', 'cert', 'key', 'write-out', 'data-dir', 'name', 'initial-cluster', 'initial-cluster-token',
  'initial-advertise-peer-urls', 'from-etcd', 'from-kine', 'user', 'password', 'wal-dir',
]);
const boolFlags = new Set(['skip-hash-check', 'insecure-skip-tls-verify']);

export interface Args {
  positional: string[];
  flags: Map<string, string>;
}

export function parseArgs(argv: string[]): Args {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-w') {
      flags.set('write-out', argv[++i] ?? '');
      continue;
    }
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const given = arg.slice(2, eq < 0 ? undefined : eq);
    const name = s3FlagOf(given) ?? given;
    if (boolFlags.has(name) || s3BoolFlags.includes(name)) {
      flags.set(name, eq < 0 ? 'true' : arg.slice(eq + 1));
    } else if (valueFlags.has(name) || s3FlagOf(name) !== undefined) {
      const value = eq < 0 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined) throw new ConfigError(`flag --${name} needs a value`);
      flags.set(name, value);
    } else {
      throw new ConfigError(`unknown flag --${given}`);
    }
  }
  return { positional, flags };
}

function restoreCluster(a: Args): RestoreCluster {
  const name = a.flags.get('name') ?? 'default';
  const advertise = (a.flags.get('initial-advertise-peer-urls') ?? 'http://127.0.0.1:2380').split(',').filter((u) => u !== '');
  const clusterText = a.flags.get('initial-cluster') ?? advertise.map((u) => `${name}=${u}`).join(',');
  return {
    name,
    initialCluster: parseInitialCluster(clusterText),
    clusterToken: a.flags.get('initial-cluster-token') ?? 'etcd-cluster',
    initialAdvertisePeerUrls: advertise,
  };
}

/**
 * etcdctl's connection flags, each with its ETCDCTL_* environment variable as etcdctl reads them (a flag wins):
 * --cacert, --cert, --key, --insecure-skip-tls-verify, --user NAME[:PASSWORD], --password.
 */
export function tlsOf(a: Args, env: NodeJS.ProcessEnv = process.env): EndpointTls {
  const ca = a.flags.get('cacert') ?? env.ETCDCTL_CACERT;
  const cert = a.flags.get('cert') ?? env.ETCDCTL_CERT;
  const key = a.flags.get('key') ?? env.ETCDCTL_KEY;
  const skip = a.flags.get('insecure-skip-tls-verify') ?? env.ETCDCTL_INSECURE_SKIP_TLS_VERIFY;
  return {
    ...(ca !== undefined && ca !== '' ? { caFile: ca } : {}),
    ...(cert !== undefined && cert !== '' ? { certFile: cert } : {}),
    ...(key !== undefined && key !== '' ? { keyFile: key } : {}),
    ...(skip === 'true' ? { insecureSkipVerify: true } : {}),
  };
}

function userOf(a: Args, env: NodeJS.ProcessEnv = process.env): EndpointUser | undefined {
  const user = a.flags.get('user') ?? env.ETCDCTL_USER;
  if (user === undefined || user === '') return undefined;
  const password = a.flags.get('password') ?? env.ETCDCTL_PASSWORD;
  if (password !== undefined) return { name: user, password };
  const colon = user.indexOf(':');
  if (colon < 0) throw new ConfigError('--user needs NAME:PASSWORD, or --password (etcdctl would prompt; we do not)');
  return { name: user.slice(0, colon), password: user.slice(colon + 1) };
}

function endpointOf(a: Args, env: NodeJS.ProcessEnv = process.env): string {
  return (a.flags.get('endpoints') ?? env.ETCDCTL_ENDPOINTS ?? '127.0.0.1:2379').split(',')[0]!;
}

function connectionOf(a: Args): { tls: EndpointTls; user?: EndpointUser } {
  const user = userOf(a);
  return { tls: tlsOf(a), ...(user !== undefined ? { user } : {}) };
}

function oneFile(a: Args, verb: string): string {
  if (a.positional.length !== 1) throw new ConfigError(`snapshot ${verb} expects one argument (the snapshot file)`);
  return a.positional[0]!;
}

function dataDirOf(a: Args): string {
  const dir = a.flags.get('data-dir');
  if (dir === undefined || dir === '') throw new ConfigError('--data-dir is required');
  return dir;
}

async function restore(file: string, a: Args, io: CliStreams, skipHashCheck: boolean): Promise<ImportResult> {
  const progress = new Progress('restore', io.stderr, 'records');
  const r = await restoreSnapshotFile(file, dataDirOf(a), {
    cluster: restoreCluster(a),
    ...walDirOption(a),
    skipHashCheck,
    onProgress: (n) => progress.update(n),
  });
  progress.done(r.records);
  return r;
}

/** etcdutl's --wal-dir: where the restored member's log goes (default <data-dir>/member/wal). */
function walDirOption(a: Args): { walDir?: string } {
  const dir = a.flags.get('wal-dir');
  return dir === undefined || dir === '' ? {} : { walDir: dir };
}

function restored(r: ImportResult, dataDir: string, a: Args): string {
  return `restored snapshot: revision ${r.revision}, ${r.records} revisions, ${r.leases} leases; member ${r.memberId.toString(16)} ` +
    `of cluster ${r.clusterId.toString(16)} in ${dataDir}\nstart it with: ${startCommand(dataDir, restoreCluster(a), walDirOption(a).walDir)}\n`;
}

/**
 * The exact command that starts a restored member where its cluster knows it (its peer URLs from
 * --initial-cluster); a restart with only --name and --data-dir uses those URLs too (main/registered-urls.ts).
 * The client URL is on the peer URL's host, one port below it (2379 beside 2380, etcd's pair): a restore of
 * member m1 at http://10.0.0.1:2380 serves clients on http://10.0.0.1:2379, not on 127.0.0.1 (issue 32, item 5).
 */
export function startCommand(dataDir: string, c: RestoreCluster, walDir: string | undefined): string {
  const peerUrls = c.initialCluster.find((m) => m.name === c.name)?.peerUrls ?? [];
  const peers = peerUrls.join(',');
  const clients = peerUrls.map(clientUrlBeside).join(',');
  return `npx etcetera server --name ${c.name} --data-dir ${dataDir}${walDir === undefined ? '' : ` --wal-dir ${walDir}`}` +
    ` --listen-peer-urls ${peers} --initial-advertise-peer-urls ${peers}` +
    ` --listen-client-urls ${clients} --advertise-client-urls ${clients}`;
}

function clientUrlBeside(peerUrl: string): string {
  const u = new URL(peerUrl);
  const peerPort = u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port);
  u.port = String(peerPort > 1 ? peerPort - 1 : 2379);
  return u.toString().replace(/\/$/, '');
}

export async function snapshotCommand(argv: string[], io: CliStreams): Promise<number> {
  const [verb, ...rest] = argv;
  return runReporting(io, async () => {
    if (verb === undefined || verb === 'help' || verb === '--help') {
      io.stdout.write(snapshotUsage);
      return verb === undefined ? 2 : 0;
    }
    const a = parseArgs(rest);
    switch (verb) {
      case 'save': {
        const file = oneFile(a, 'save');
        const s3 = s3Of(a, (f) => a.flags.get(f));
        const { sizeBytes } = await fetchSnapshot(endpointOf(a), file, { ...connectionOf(a), progress: new Progress('snapshot save', io.stderr) });
        io.stdout.write(`Snapshot saved at ${file} (${humanBytes(sizeBytes)})\n`);
        if (s3 !== undefined) {
          // After fetchSnapshot verified the file (etcd's SHA-256), as the member does before its uploads.
          const store = await (await import('./s3-store.js')).S3Store.open(s3);
          await store.upload(file);
          io.stdout.write(`Snapshot uploaded to ${store.location(basename(file))}\n`);
        }
        return 0;
      }
      case 'status': {
        const s = await snapshotStatus(oneFile(a, 'status'));
        const format = a.flags.get('write-out') ?? 'simple';
        if (format === 'json') io.stdout.write(`${JSON.stringify(s)}\n`);
        else if (format === 'table') io.stdout.write(statusTable(s));
        else if (format === 'simple') io.stdout.write(`${s.hash.toString(16)}, ${s.revision}, ${s.totalKey}, ${humanBytes(s.totalSize)}\n`);
        else throw new ConfigError(`unknown output format ${JSON.stringify(format)} (table, json, simple)`);
        return 0;
      }
      case 'restore': {
        const file = oneFile(a, 'restore');
        if (file.startsWith('s3://')) return await restoreFromBucket(file, a, io);
        const r = await restore(file, a, io, a.flags.get('skip-hash-check') === 'true');
        io.stdout.write(restored(r, dataDirOf(a), a));
        return 0;
      }
      default:
        throw new ConfigError(`unknown snapshot command ${JSON.stringify(verb)}\n\n${snapshotUsage}`);
    }
  });
}

/** The --etcd-s3 options of a verb, as a ConfigError when incomplete. */
function s3Of(a: Args, get: (flag: string) => string | undefined): S3Options | undefined {
  try {
    return s3OptionsOf(get, process.env);
  } catch (error) {
    if (error instanceof S3OptionError) throw new ConfigError(error.message);
    throw error;
  }
}

/** `snapshot restore s3://bucket/folder/name`: downloaded beside the data directory, restored, removed. */
async function restoreFromBucket(url: string, a: Args, io: CliStreams): Promise<number> {
  const { fetchFromBucket, s3OptionsForUrl } = await import('./s3-fetch.js');
  const dataDir = dataDirOf(a);
  const { get, name } = s3OptionsForUrl(url, (f) => a.flags.get(f));
  const work = `${resolve(dataDir)}.s3-restore`;
  try {
    const { path } = await fetchFromBucket(s3Of(a, get)!, name, work);
    io.stderr.write(`downloaded ${url}\n`);
    const r = await restore(path, a, io, a.flags.get('skip-hash-check') === 'true');
    io.stdout.write(restored(r, dataDir, a));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return 0;
}

/** `etcetera migrate --from-etcd URL --data-dir D`: a live etcd's snapshot, verified, restored. */
export async function migrateCommand(argv: string[], io: CliStreams): Promise<number> {
  return runReporting(io, async () => {
    if (argv[0] === undefined || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
      io.stdout.write(migrateUsage);
      return argv[0] === undefined ? 2 : 0;
    }
    const a = parseArgs(argv);
    const kine = a.flags.get('from-kine');
    if (kine !== undefined) return migrateKine(kine, a, io);
    const from = a.flags.get('from-etcd');
    if (from === undefined) throw new ConfigError(`migrate needs --from-etcd URL or --from-kine FILE\n\n${migrateUsage}`);
    const dataDir = dataDirOf(a);
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    const file = join(resolve(dataDir), 'migrate-from-etcd.db');
    try {
      await fetchSnapshot(from.split(',')[0]!, file, { ...connectionOf(a), progress: new Progress('fetch snapshot', io.stderr) });
      const r = await restore(file, a, io, false);
      io.stdout.write(restored(r, dataDir, a));
    } finally {
      await rm(file, { force: true });
    }
    return 0;
  });
}

/** `etcetera migrate --from-kine state.db --data-dir D` (src/backup/kine-migrate.ts). */
async function migrateKine(file: string, a: Args, io: CliStreams): Promise<number> {
  const dataDir = dataDirOf(a);
  const progress = new Progress('migrate from kine', io.stderr, 'records');
  const r = await migrateFromKine(file, dataDir, { cluster: restoreCluster(a), ...walDirOption(a), onProgress: (n) => progress.update(n) });
  progress.done(r.records);
  io.stdout.write(`kine database ${file}: revision ${r.sourceRevision}, compacted at ${r.sourceCompactRevision}\n${restored(r, dataDir, a)}`);
  return 0;
}

function statusTable(s: { hash: number; revision: number; totalKey: number; totalSize: number }): string {
  return textTable(['HASH', 'REVISION', 'TOTAL KEYS', 'TOTAL SIZE'], [[s.hash.toString(16), String(s.revision), String(s.totalKey), humanBytes(s.totalSize)]]);
}

/** Expected failures (bad flags, a damaged or mismatched file, an unreachable endpoint) as one line, exit 1. */
async function runReporting(io: CliStreams, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof ConfigError || err instanceof RestoreError || err instanceof BboltFormatError || isFsError(err) || err instanceof S3Error) {
      io.stderr.write(`Error: ${(err as Error).message}\n`);
      return err instanceof ConfigError ? 2 : 1;
    }
    throw err;
  }
}

function isFsError(err: unknown): boolean {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && /^E[A-Z]+$/.test((err as NodeJS.ErrnoException).code!);
}
