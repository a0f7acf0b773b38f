/**
 * `etcetera snapshot ls|delete|prune` (k3s's `etcd-snapshot` verbs) over the scheduled snapshot directory:
 *
 *   etcetera snapshot ls     [--data-dir D | --snapshot-dir S] [--output table|json]
 *   etcetera snapshot delete NAME... [--data-dir D | --snapshot-dir S]
 *   etcetera snapshot prune  [--data-dir D | --snapshot-dir S] [--name NODE] [--snapshot-retention N]
 *
 * The directory defaults as the server's does: `<data-dir>/snapshots`, data dir `./etcetera-data`.
 */
import { join } from 'node:path';
import { s3BoolFlags, s3FlagOf, s3OptionsOf, type S3Options } from '../config/s3-options.js';
import { deleteSnapshots, listSnapshots, pruneSnapshots } from './snapshot-dir.js';
import type { BucketSnapshot, S3Store } from './s3-store.js';

export const snapshotDirVerbs = ['ls', 'list', 'delete', 'prune'] as const;

export interface CliOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Each verb's own usage (main/cli-commands.ts). */
export const snapshotLsUsage = `Usage:
  etcetera snapshot ls [--data-dir D | --snapshot-dir S] [--output table|json]

Lists the scheduled snapshots (k3s's etcd-snapshot ls); the directory defaults to <data-dir>/snapshots.
With --etcd-s3 and the --etcd-s3-* flags (or k3s's --s3-* spellings), the bucket's are listed too.
`;

export const snapshotDeleteUsage = `Usage:
  etcetera snapshot delete NAME... [--data-dir D | --snapshot-dir S]

Deletes the named scheduled snapshots (k3s's etcd-snapshot delete); with --etcd-s3, from the bucket too.
`;

export const snapshotPruneUsage = `Usage:
  etcetera snapshot prune [--data-dir D | --snapshot-dir S] [--name NODE] [--snapshot-retention N]

Keeps NODE's N newest scheduled snapshots (default 5) and deletes the rest (k3s's etcd-snapshot prune); with
--etcd-s3, in the bucket too.
`;

export const snapshotDirUsage = `Usage:
${[snapshotLsUsage, snapshotDeleteUsage, snapshotPruneUsage].map((u) => u.split('\n')[1]!).join('\n')}

With --etcd-s3 (or k3s's --s3) and the --etcd-s3-* flags (--s3-bucket, --s3-endpoint, ... as k3s spells them
for etcd-snapshot), each verb also works on the bucket: ls lists both, delete and prune remove from both.
`;

interface Parsed {
  positional: string[];
  flags: Map<string, string>;
}

const knownFlags = new Set(['data-dir', 'snapshot-dir', 'output', 'name', 'snapshot-retention']);

function parseArgs(argv: readonly string[]): Parsed {
  const positional: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const given = arg.slice(2, eq >= 0 ? eq : undefined);
    const name = s3FlagOf(given) ?? given;
    if (!knownFlags.has(name) && s3FlagOf(name) === undefined) throw new Error(`unknown flag --${given}`);
    if (s3BoolFlags.includes(name) && eq < 0) {
      flags.set(name, 'true');
      continue;
    }
    const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new Error(`--${name} needs a value`);
    flags.set(name, value);
  }
  return { positional, flags };
}

/** Runs a verb of this file; undefined when `argv[0]` is not one of them (another snapshot verb). */
export async function runSnapshotDirCommand(argv: readonly string[], out: CliOutput): Promise<number | undefined> {
  const [verb, ...rest] = argv;
  if (!(snapshotDirVerbs as readonly string[]).includes(verb ?? '')) return undefined;
  let parsed: Parsed;
  try {
    parsed = parseArgs(rest);
  } catch (error) {
    out.stderr(`etcetera snapshot ${verb}: ${(error as Error).message}\n\n${snapshotDirUsage}`);
    return 2;
  }
  const { flags, positional } = parsed;
  const dir = flags.get('snapshot-dir') ?? join(flags.get('data-dir') ?? './etcetera-data', 'snapshots');
  try {
    const bucket = await openBucket(s3OptionsOf((f) => flags.get(f), process.env));
    switch (verb) {
      case 'ls':
      case 'list':
        return await list(dir, bucket, flags.get('output') ?? 'table', out);
      case 'delete': {
        if (positional.length === 0) throw new Error('name the snapshots to delete');
        const { deleted, missing } = await deleteSnapshots(dir, positional);
        for (const name of deleted) out.stdout(`Removing local snapshot ${join(dir, name)}\n`);
        // A name is missing only when it is in neither place.
        const inBucket = bucket === undefined ? { deleted: [], missing: positional } : await bucket.delete(positional);
        for (const name of inBucket.deleted) out.stdout(`Removing snapshot ${bucket!.location(name)}\n`);
        const nowhere = missing.filter((n) => inBucket.missing.includes(n));
        for (const name of nowhere) out.stderr(`no snapshot ${name} in ${dir}${bucket !== undefined ? ` or ${bucket.location('')}` : ''}\n`);
        return nowhere.length > 0 ? 1 : 0;
      }
      default: {
        const retentionText = flags.get('snapshot-retention') ?? '5';
        const retention = Number(retentionText);
        if (!/^\d+$/.test(retentionText) || retention < 1) throw new Error(`--snapshot-retention must be a positive integer, got ${JSON.stringify(retentionText)}`);
        const node = flags.get('name') ?? 'default';
        const deleted = await pruneSnapshots(dir, node, retention);
        for (const name of deleted) out.stdout(`Removing local snapshot ${join(dir, name)}\n`);
        for (const name of (await bucket?.prune(node, retention)) ?? []) out.stdout(`Removing snapshot ${bucket!.location(name)}\n`);
        return 0;
      }
    }
  } catch (error) {
    out.stderr(`etcetera snapshot ${verb}: ${(error as Error).message}\n`);
    return 1;
  }
}

/** The bucket when --etcd-s3 is on (its client is loaded only then). */
async function openBucket(s3: S3Options | undefined): Promise<S3Store | undefined> {
  return s3 === undefined ? undefined : (await import('./s3-store.js')).S3Store.open(s3);
}

async function list(dir: string, bucket: S3Store | undefined, format: string, out: CliOutput): Promise<number> {
  if (format !== 'table' && format !== 'json') throw new Error(`--output must be table or json, got ${JSON.stringify(format)}`);
  // As k3s: the bucket's snapshots, then the local ones.
  const remote: BucketSnapshot[] = bucket === undefined ? [] : await bucket.list();
  const files = [...remote, ...(await listSnapshots(dir)).map((f) => ({ name: f.name, location: `file://${f.path}`, sizeBytes: f.sizeBytes, createdMs: f.createdMs }))];
  if (format === 'json') {
    out.stdout(`${JSON.stringify(files.map((f) => ({ name: f.name, location: f.location, size: f.sizeBytes, createdAt: new Date(f.createdMs).toISOString() })), null, 2)}\n`);
    return 0;
  }
  // k3s's columns.
  const rows = [['Name', 'Location', 'Size', 'Created'], ...files.map((f) => [f.name, f.location, String(f.sizeBytes), new Date(f.createdMs).toISOString()])];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows) out.stdout(`${r.map((cell, c) => cell.padEnd(widths[c]!)).join(' ').trimEnd()}\n`);
  return 0;
}
