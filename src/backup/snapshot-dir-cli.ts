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
import { deleteSnapshots, listSnapshots, pruneSnapshots } from './snapshot-dir.js';

export const snapshotDirVerbs = ['ls', 'list', 'delete', 'prune'] as const;

export interface CliOutput {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Each verb's own usage (main/cli-commands.ts). */
export const snapshotLsUsage = `Usage:
  etcetera snapshot ls [--data-dir D | --snapshot-dir S] [--output table|json]

Lists the scheduled snapshots (k3s's etcd-snapshot ls); the directory defaults to <data-dir>/snapshots.
`;

export const snapshotDeleteUsage = `Usage:
  etcetera snapshot delete NAME... [--data-dir D | --snapshot-dir S]

Deletes the named scheduled snapshots (k3s's etcd-snapshot delete).
`;

export const snapshotPruneUsage = `Usage:
  etcetera snapshot prune [--data-dir D | --snapshot-dir S] [--name NODE] [--snapshot-retention N]

Keeps NODE's N newest scheduled snapshots (default 5) and deletes the rest (k3s's etcd-snapshot prune).
`;

export const snapshotDirUsage = `Usage:
${[snapshotLsUsage, snapshotDeleteUsage, snapshotPruneUsage].map((u) => u.split('\n')[1]!).join('\n')}
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
    const name = arg.slice(2, eq >= 0 ? eq : undefined);
    if (!knownFlags.has(name)) throw new Error(`unknown flag --${name}`);
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
    switch (verb) {
      case 'ls':
      case 'list':
        return await list(dir, flags.get('output') ?? 'table', out);
      case 'delete': {
        if (positional.length === 0) throw new Error('name the snapshots to delete');
        const { deleted, missing } = await deleteSnapshots(dir, positional);
        for (const name of deleted) out.stdout(`Removing local snapshot ${join(dir, name)}\n`);
        for (const name of missing) out.stderr(`no snapshot ${name} in ${dir}\n`);
        return missing.length > 0 ? 1 : 0;
      }
      default: {
        const retentionText = flags.get('snapshot-retention') ?? '5';
        const retention = Number(retentionText);
        if (!/^\d+$/.test(retentionText) || retention < 1) throw new Error(`--snapshot-retention must be a positive integer, got ${JSON.stringify(retentionText)}`);
        const deleted = await pruneSnapshots(dir, flags.get('name') ?? 'default', retention);
        for (const name of deleted) out.stdout(`Removing local snapshot ${join(dir, name)}\n`);
        return 0;
      }
    }
  } catch (error) {
    out.stderr(`etcetera snapshot ${verb}: ${(error as Error).message}\n`);
    return 1;
  }
}

async function list(dir: string, format: string, out: CliOutput): Promise<number> {
  if (format !== 'table' && format !== 'json') throw new Error(`--output must be table or json, got ${JSON.stringify(format)}`);
  const files = await listSnapshots(dir);
  if (format === 'json') {
    out.stdout(`${JSON.stringify(files.map((f) => ({ name: f.name, location: `file://${f.path}`, size: f.sizeBytes, createdAt: new Date(f.createdMs).toISOString() })), null, 2)}\n`);
    return 0;
  }
  // k3s's columns.
  const rows = [['Name', 'Location', 'Size', 'Created'], ...files.map((f) => [f.name, `file://${f.path}`, String(f.sizeBytes), new Date(f.createdMs).toISOString()])];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows) out.stdout(`${r.map((cell, c) => cell.padEnd(widths[c]!)).join(' ').trimEnd()}\n`);
  return 0;
}
