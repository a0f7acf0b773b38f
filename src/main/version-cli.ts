/**
 * `etcetera version`: this build, the etcd API it speaks, the data format it writes and reads, and, when a
 * member answers at the endpoint, the version its cluster runs at (base/version.ts):
 *
 *   etcetera 0.2.0+fdef2e7
 *   etcd API 3.5.17
 *   data format 2 (reads 1 to 2)
 *   node v22.11.0
 *   cluster version 0.2 (127.0.0.1:2379, a member of build 0.2.0+fdef2e7)
 *
 *   etcetera version [--endpoints HOST:PORT] [--cacert F --cert F --key F]
 *
 * The cluster line is left out when nothing answers at the default endpoint (no cluster here); with
 * --endpoints given it says why it is missing.
 */
import { dataFormatOldest, dataFormatVersion } from '../base/version.js';
import { buildVersion } from '../config/build-info.js';
import type { CliStreams } from '../backup/snapshot-cli.js';

export const versionUsage = `etcetera version: this build, the etcd API, the data format and the cluster version

Usage:
  etcetera version [--endpoints HOST:PORT] [--cacert F] [--cert F] [--key F] [--insecure-skip-tls-verify]

The cluster version is read from the member at --endpoints (default ETCDCTL_ENDPOINTS or 127.0.0.1:2379),
when one answers.
`;

export async function versionCommand(argv: string[], io: CliStreams, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.stdout.write(versionUsage);
    return 0;
  }
  const { etcdVersion } = await import('../node/maintenance/maintenance-ops.js');
  io.stdout.write(
    `etcetera ${buildVersion()}\netcd API ${etcdVersion}\n` +
    `data format ${dataFormatVersion} (reads ${dataFormatOldest} to ${dataFormatVersion})\nnode ${process.version}\n`,
  );
  if (argv.length === 0 && env.ETCDCTL_ENDPOINTS === undefined) return clusterLine(['127.0.0.1:2379'], io, false);
  const { parseArgs, tlsOf } = await import('../backup/snapshot-cli.js');
  let endpoint: string;
  let a: ReturnType<typeof parseArgs>;
  try {
    a = parseArgs(argv);
    if (a.positional.length > 0) throw new Error(`unexpected argument ${JSON.stringify(a.positional[0])}`);
    endpoint = (a.flags.get('endpoints') ?? env.ETCDCTL_ENDPOINTS ?? '127.0.0.1:2379').split(',')[0]!.trim();
  } catch (error) {
    io.stderr.write(`etcetera version: ${(error as Error).message}\n\n${versionUsage}`);
    return 2;
  }
  return clusterLine([endpoint], io, true, tlsOf(a, env));
}

async function clusterLine(endpoints: string[], io: CliStreams, asked: boolean, tls: Parameters<typeof import('./status-cli.js')['fetchStatus']>[1] = {}): Promise<number> {
  const { fetchStatus } = await import('./status-cli.js');
  const endpoint = endpoints[0]!;
  try {
    const s = await fetchStatus(endpoint, tls);
    // A member before 0.2 reports neither: its cluster runs at 0.1 (base/version.ts).
    const build = (s.build as string | undefined) ?? 'before 0.2';
    const cluster = s.clusterVersion === undefined ? '0.1' : (s.clusterVersion ?? 'not decided yet');
    io.stdout.write(`cluster version ${cluster} (${endpoint}, a member of build ${build})\n`);
  } catch (error) {
    if (asked) io.stdout.write(`cluster version unknown (${endpoint}: ${error instanceof Error ? error.message : String(error)})\n`);
  }
  return 0;
}
