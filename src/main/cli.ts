#!/usr/bin/env node
/**
 * The `etcetera` command: a thin layer over the embedding API.
 *
 *   etcetera server [flags]     run a member (etcd's flag names; k3s's --cluster-init/--server/--token)
 *   etcetera witness [flags]    run a witness member: joins with --server/--token, votes, holds no data (main/witness.ts)
 *   etcetera snapshot ls|delete|prune   the scheduled snapshot directory (src/backup/snapshot-dir-cli.ts)
 *   etcetera version            print versions
 *   etcetera snapshot ...       save/status/restore etcd-format snapshots (src/backup/snapshot-cli.ts)
 *   etcetera migrate ...        restore a live etcd's data into a new data directory
 *   etcetera status ...         health, leader, term, fsync latency and disk wear of members (status-cli.ts)
 *
 * Signals: SIGTERM/SIGINT stop gracefully (a leader hands leadership over first, everything is flushed); a
 * second signal exits at once. A member removed from the cluster stops and says so.
 */
import { ConfigError, parseConfig } from '../config/config.js';
import { createLogger } from '../config/log.js';
import { openLogOutputs } from '../config/log-outputs.js';
import { parseTestFaults, plantProcessFaults, testFaultsEnv } from '../config/test-faults.js';
import { ProcessFaults } from './process-faults.js';
import { makeNewFilesPrivate, warnIfShared } from './private-files.js';

// Every command loads only what it runs (issue 24): a witness never loads the gRPC server, protobuf
// descriptors, LevelDB, bcrypt or the store: importing them all here held a witness at 72 MB of RSS at rest,
// 58 MB without them (restarted; a first join also loads gRPC's client, join/join-client.ts).
// The bundle (scripts/bundle-cli.mjs) splits at these dynamic imports.

const usage = `etcetera: a Raft-replicated key-value store speaking the etcd v3 API

Usage:
  etcetera server [flags]    run a member (see \`etcetera server --help\`)
  etcetera witness --name N --data-dir D --server URL --token T   a witness: a third voter that holds no data
                             (votes and keeps the Raft log's tail; serves /health and /metrics only; same flags)
  etcetera version [--endpoints HOST:PORT]   this build, etcd API, data format, and the cluster's version
  etcetera status [--endpoints HOST:PORT,...] [-w table|json]   health, leader, term, fsync and disk wear per member
  etcetera snapshot save|status|restore ...   etcd-format snapshots (see \`etcetera snapshot help\`)
  etcetera snapshot ls|delete|prune   scheduled snapshots in <data-dir>/snapshots (k3s etcd-snapshot verbs)
  etcetera migrate --from-etcd URL --data-dir DIR     a live etcd's data into a new member (see \`etcetera migrate --help\`)
  etcetera migrate --from-kine state.db --data-dir DIR   kine's SQLite database into a new member
`;

async function printVersion(argv: string[] = []): Promise<number> {
  const { versionCommand } = await import('./version-cli.js');
  return versionCommand(argv, { stdout: process.stdout, stderr: process.stderr });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(usage);
    return command === undefined ? 2 : 0;
  }
  const help = await (await import('./cli-commands.js')).helpFor(argv);
  if (help !== undefined) {
    process.stdout.write(help);
    return 0;
  }
  if (command === 'version' || command === '--version') return printVersion(rest);
  if (command === 'snapshot' || command === 'etcd-snapshot' || command === 'migrate') {
    // A restore or migration builds a data directory: its files private as the server's (LevelDB picks its own modes).
    makeNewFilesPrivate();
  }
  if (command === 'snapshot' || command === 'etcd-snapshot') {
    // ls/delete/prune (the scheduled snapshot directory) here, save/status/restore in snapshot-cli.ts.
    const out = { stdout: (t: string) => process.stdout.write(t), stderr: (t: string) => process.stderr.write(t) };
    const { runSnapshotDirCommand } = await import('../backup/snapshot-dir-cli.js');
    return (await runSnapshotDirCommand(rest, out)) ?? (await import('../backup/snapshot-cli.js')).snapshotCommand(rest, process);
  }
  if (command === 'migrate') return (await import('../backup/snapshot-cli.js')).migrateCommand(rest, process);
  if (command === 'status') return (await import('./status-cli.js')).statusCommand(rest, process);
  if (command !== 'server' && command !== 'witness') {
    process.stderr.write(`etcetera: unknown command ${JSON.stringify(command)}\n\n${usage}`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseConfig({ argv: rest, env: process.env });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`etcetera: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  if (parsed.kind === 'help') {
    process.stdout.write(parsed.text);
    return 0;
  }
  if (parsed.kind === 'version') return printVersion();
  const { config, warnings } = parsed;
  let sinks;
  try {
    sinks = openLogOutputs(config.logOutputs);
  } catch (error) {
    process.stderr.write(`etcetera: cannot open --log-outputs: ${(error as Error).message}\n`);
    return 2;
  }
  const logger = createLogger({ level: config.logLevel, sink: sinks.sink, sinkSync: sinks.sinkSync });
  // From here on a bug that escapes every handler is logged and stops the member (process-faults.ts).
  const faults = new ProcessFaults({ logger, exit: (code) => process.exit(code) });
  faults.install(process);
  for (const w of warnings) logger.warn(w);
  makeNewFilesPrivate();
  for (const dir of [config.dataDir, ...(config.walDir !== undefined ? [config.walDir] : [])]) await warnIfShared(dir, logger);
  const unsafeTestFaults = parseTestFaults(process.env[testFaultsEnv]);
  if (unsafeTestFaults.size > 0) {
    logger.error('UNSAFE: test faults are on; this member breaks its guarantees on purpose', { faults: [...unsafeTestFaults] });
  }
  if (command === 'witness' && (config.clusterReset || config.clusterResetRestorePath !== undefined)) {
    logger.error('a witness holds no data: reset the cluster from a data member');
    return 2;
  }
  if (config.clusterResetRestorePath !== undefined) {
    try {
      const { restoreForClusterReset } = await import('../backup/cluster-reset-restore.js');
      await restoreForClusterReset({
        dataDir: config.dataDir, name: config.name, initialAdvertisePeerUrls: config.initialAdvertisePeerUrls,
        path: config.clusterResetRestorePath, logger, nowSeconds: Math.floor(Date.now() / 1000),
        ...(config.token !== undefined ? { token: config.token } : {}),
        ...(config.walDir !== undefined ? { walDir: config.walDir } : {}),
        ...(config.etcdS3 !== undefined ? { s3: config.etcdS3, snapshotDir: config.scheduledSnapshots?.dir ?? `${config.dataDir}/snapshots` } : {}),
      });
    } catch (error) {
      logger.error('cluster reset: could not restore the snapshot', { path: config.clusterResetRestorePath, error: error instanceof Error ? error.message : String(error) });
      return 1;
    }
  }
  // No V8 heap flag is set here: the young generation's size is fixed when Node starts (--max-semi-space-size
  // read later changes nothing), and --semi-space-growth-factor=1, set here for the witness until issue 34, was
  // ignored by Node 20's V8 11.3 (the new space still doubled 1 → 32 MB under an allocating loop, flag or not).
  // Only NODE_OPTIONS=--max-semi-space-size=N caps it (N=1 made an allocating loop 6x slower: not a default).
  let member;
  try {
    member = command === 'witness'
      ? await (await import('./witness.js')).startWitness({ ...config, logger })
      : await (await import('./member.js')).startMember({ ...config, logger, unsafeTestFaults });
  } catch (error) {
    logger.error('could not start', { error: error instanceof Error ? error.message : String(error) });
    return 1;
  }
  const running = member;
  faults.stopWith(() => running.close());
  logger.info(`etcetera ${command === 'witness' ? 'witness' : 'member'} started`, { name: config.name, member: member.memberId.toString(16), clientUrls: member.clientUrls });
  plantProcessFaults(unsafeTestFaults);
  if (config.clusterReset && 'server' in member) return (await import('../backup/cluster-reset.js')).finishClusterReset(member, logger);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        logger.warn('second signal: exiting now', { signal });
        resolve(1);
        return;
      }
      stopping = true;
      logger.info('stopping', { signal });
      member.close().then(
        () => resolve(0),
        (error: unknown) => {
          logger.error('error while stopping', { error: String(error) });
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    void member.stopped.then(({ reason }) => {
      if (stopping) return;
      const removed = reason.startsWith('removed');
      if (removed) logger.warn(`stopping: this member was ${reason}`);
      else logger.error(`stopping: ${reason}`);
      void member.close().finally(() => resolve(removed ? 0 : 1));
    });
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`etcetera: fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
