/**
 * The CLI's table of commands, each with its own usage: `etcetera <command...> --help` (or -h) prints that
 * command's usage and nothing else (issue 32, item 5: `migrate --help` printed the snapshot usage,
 * `snapshot restore --help` failed with "unknown flag --help", `witness --help` printed the server's).
 * test/main/cli-help.test.ts walks this table. Usages are imported only when asked for, so a witness still
 * loads nothing it does not run (cli.ts).
 */

export interface CliCommand {
  /** The words that name it, after `etcetera`. */
  readonly words: readonly string[];
  readonly usage: () => Promise<string>;
}

const serverHelp = async (): Promise<string> => (await import('../config/config-options.js')).helpText();

const witnessUsage = async (): Promise<string> => {
  const flags = (await serverHelp()).split('\n').slice(1).join('\n');
  return 'Usage: etcetera witness --name N --data-dir D --server URL --token T [flags]\n\n' +
    'A witness: a voting member that holds no data (it keeps the Raft log\'s tail and votes), for a third vote\n' +
    'beside two data members. It joins a running cluster with --server (a data member\'s URL) and --token, or\n' +
    'starts with a new one named in --initial-cluster-witnesses. It serves /health, /metrics and /status on its\n' +
    'client and metrics URLs and no key-value API. It takes the server\'s flags:\n' + flags;
};

export const cliCommands: readonly CliCommand[] = [
  { words: ['server'], usage: serverHelp },
  { words: ['witness'], usage: witnessUsage },
  { words: ['version'], usage: async () => (await import('./version-cli.js')).versionUsage },
  { words: ['status'], usage: async () => (await import('./status-cli.js')).statusUsage },
  { words: ['snapshot', 'save'], usage: async () => (await import('../backup/snapshot-cli.js')).snapshotSaveUsage },
  { words: ['snapshot', 'status'], usage: async () => (await import('../backup/snapshot-cli.js')).snapshotStatusUsage },
  { words: ['snapshot', 'restore'], usage: async () => (await import('../backup/snapshot-cli.js')).snapshotRestoreUsage },
  { words: ['snapshot', 'ls'], usage: async () => (await import('../backup/snapshot-dir-cli.js')).snapshotLsUsage },
  { words: ['snapshot', 'delete'], usage: async () => (await import('../backup/snapshot-dir-cli.js')).snapshotDeleteUsage },
  { words: ['snapshot', 'prune'], usage: async () => (await import('../backup/snapshot-dir-cli.js')).snapshotPruneUsage },
  { words: ['migrate'], usage: async () => (await import('../backup/snapshot-cli.js')).migrateUsage },
];

/** Other names of a command's first word (k3s's `etcd-snapshot`, `snapshot list`). */
const aliases: Record<string, string> = { 'etcd-snapshot': 'snapshot', list: 'ls' };

/** The usage `argv` asks for (`--help` or `-h` after a command's words), or undefined. */
export async function helpFor(argv: readonly string[]): Promise<string | undefined> {
  if (!argv.slice(1).some((a) => a === '--help' || a === '-h')) return undefined;
  const words = argv.map((w) => aliases[w] ?? w);
  const found = cliCommands
    .filter((c) => c.words.every((w, i) => words[i] === w))
    .sort((a, b) => b.words.length - a.words.length)[0];
  return found === undefined ? undefined : found.usage();
}
